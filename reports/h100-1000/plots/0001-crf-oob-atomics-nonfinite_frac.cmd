# Redraws 0001-crf-oob-atomics-nonfinite_frac.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0001-crf-oob-atomics-nonfinite_frac.dat' '0001-crf-oob-atomics-nonfinite_frac.png' '0001-crf-oob-atomics-nonfinite_frac.par'
