# Redraws 0005-bf16-crf-nan-margin.png from its data in this folder (edit margin.gp to restyle):
gnuplot -c 'margin.gp' '0005-bf16-crf-nan-margin.dat' '0005-bf16-crf-nan-margin.png' '0005-bf16-crf-nan-margin.par'
