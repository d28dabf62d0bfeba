# Redraws 0003-nvfp4-sf-layout.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0003-nvfp4-sf-layout.dat' '0003-nvfp4-sf-layout.png' '0003-nvfp4-sf-layout.par'
