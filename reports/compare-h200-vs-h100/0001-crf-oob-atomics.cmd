# Redraws 0001-crf-oob-atomics.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0001-crf-oob-atomics.dat' '0001-crf-oob-atomics.png' '0001-crf-oob-atomics.par'
