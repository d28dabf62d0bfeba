# Redraws 0003-nvfp4-sf-layout-nonfinite.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0003-nvfp4-sf-layout-nonfinite.dat' '0003-nvfp4-sf-layout-nonfinite.png' '0003-nvfp4-sf-layout-nonfinite.par'
