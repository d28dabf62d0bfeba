# Redraws 0001-crf-oob-atomics-max_rel_err.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0001-crf-oob-atomics-max_rel_err.dat' '0001-crf-oob-atomics-max_rel_err.png' '0001-crf-oob-atomics-max_rel_err.par'
