# Redraws 0005-bf16-crf-nan-probe_logz_err.png from its data in this folder (edit ecdf.gp to restyle):
gnuplot -c 'ecdf.gp' '0005-bf16-crf-nan-probe_logz_err.dat' '0005-bf16-crf-nan-probe_logz_err.png' '0005-bf16-crf-nan-probe_logz_err.par'
