# Redraws 0005-bf16-crf-nan.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0005-bf16-crf-nan.dat' '0005-bf16-crf-nan.png' '0005-bf16-crf-nan.par'
