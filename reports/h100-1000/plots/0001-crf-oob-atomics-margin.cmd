# Redraws 0001-crf-oob-atomics-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0001-crf-oob-atomics-margin.dat' '0001-crf-oob-atomics-margin.png' '0001-crf-oob-atomics-margin.par'
