# Redraws 0001-crf-oob-atomics.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0001-crf-oob-atomics.dat' '0001-crf-oob-atomics.png' '0001-crf-oob-atomics.par'
