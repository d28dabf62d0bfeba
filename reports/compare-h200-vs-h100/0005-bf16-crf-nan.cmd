# Redraws 0005-bf16-crf-nan.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0005-bf16-crf-nan.dat' '0005-bf16-crf-nan.png' '0005-bf16-crf-nan.par'
