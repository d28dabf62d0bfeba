# Redraws 0003-nvfp4-sf-layout-rel_l2_random.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0003-nvfp4-sf-layout-rel_l2_random.dat' '0003-nvfp4-sf-layout-rel_l2_random.png' '0003-nvfp4-sf-layout-rel_l2_random.par'
