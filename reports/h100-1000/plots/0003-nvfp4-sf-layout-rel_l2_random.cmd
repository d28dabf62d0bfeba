# Redraws 0003-nvfp4-sf-layout-rel_l2_random.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0003-nvfp4-sf-layout-rel_l2_random.dat' '0003-nvfp4-sf-layout-rel_l2_random.png' '0003-nvfp4-sf-layout-rel_l2_random.par'
