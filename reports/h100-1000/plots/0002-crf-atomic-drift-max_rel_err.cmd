# Redraws 0002-crf-atomic-drift-max_rel_err.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0002-crf-atomic-drift-max_rel_err.dat' '0002-crf-atomic-drift-max_rel_err.png' '0002-crf-atomic-drift-max_rel_err.par'
