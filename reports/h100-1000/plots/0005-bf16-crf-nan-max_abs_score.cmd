# Redraws 0005-bf16-crf-nan-max_abs_score.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0005-bf16-crf-nan-max_abs_score.dat' '0005-bf16-crf-nan-max_abs_score.png' '0005-bf16-crf-nan-max_abs_score.par'
