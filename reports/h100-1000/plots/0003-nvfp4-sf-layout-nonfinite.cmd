# Redraws 0003-nvfp4-sf-layout-nonfinite.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0003-nvfp4-sf-layout-nonfinite.dat' '0003-nvfp4-sf-layout-nonfinite.png' '0003-nvfp4-sf-layout-nonfinite.par'
