# Redraws 0004-pow-grad-nan-max_rel_err_rms.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0004-pow-grad-nan-max_rel_err_rms.dat' '0004-pow-grad-nan-max_rel_err_rms.png' '0004-pow-grad-nan-max_rel_err_rms.par'
