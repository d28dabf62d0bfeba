# Redraws 0003-nvfp4-sf-layout-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0003-nvfp4-sf-layout-margin.dat' '0003-nvfp4-sf-layout-margin.png' '0003-nvfp4-sf-layout-margin.par'
