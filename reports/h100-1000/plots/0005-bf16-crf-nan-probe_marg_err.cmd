# Redraws 0005-bf16-crf-nan-probe_marg_err.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0005-bf16-crf-nan-probe_marg_err.dat' '0005-bf16-crf-nan-probe_marg_err.png' '0005-bf16-crf-nan-probe_marg_err.par'
