# Redraws 0004-pow-grad-nan-max_rel_err_square.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0004-pow-grad-nan-max_rel_err_square.dat' '0004-pow-grad-nan-max_rel_err_square.png' '0004-pow-grad-nan-max_rel_err_square.par'
