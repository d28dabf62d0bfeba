# Redraws 0003-nvfp4-sf-layout.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0003-nvfp4-sf-layout.dat' '0003-nvfp4-sf-layout.png' '0003-nvfp4-sf-layout.par'
