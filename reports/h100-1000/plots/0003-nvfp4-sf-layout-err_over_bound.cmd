# Redraws 0003-nvfp4-sf-layout-err_over_bound.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0003-nvfp4-sf-layout-err_over_bound.dat' '0003-nvfp4-sf-layout-err_over_bound.png' '0003-nvfp4-sf-layout-err_over_bound.par'
