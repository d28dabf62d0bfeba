# Redraws 0005-bf16-crf-nan-max_marg_sum_err.png from its data in this folder (edit compare.gp to restyle):
gnuplot -c 'compare.gp' '0005-bf16-crf-nan-max_marg_sum_err.dat' '0005-bf16-crf-nan-max_marg_sum_err.png' '0005-bf16-crf-nan-max_marg_sum_err.par'
