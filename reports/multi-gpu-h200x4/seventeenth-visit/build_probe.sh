#!/bin/sh
# Links case_threads_probe against a built tree's objects (every object of build/lab but its main and MPI modules).
# usage: build_probe.sh BUILD OUT   (run from the repository root after `make BUILD=... build/lab`)
set -e
B=$1; O=$2; V=$(dirname "$0")
objs=$(find "$B/obj/lab" "$B/obj/kernels" "$B/obj/incidents" "$B/obj/replay" -name '*.o' \
       ! -name lab_main.o ! -name 'lab_mpi*.o' ! -name 'test_*.o' | sort)
cc -std=gnu11 -O2 -g -Wall -Wextra -Ilab -Ikernels -DLAB_HAVE_CUDA=1 -I/usr/include/cjson -c "$V/case_threads_probe.c" -o "$O.o"
cc -o "$O" "$O.o" $objs -lcjson -lcrypto -L/usr/local/cuda/lib64 -lcudart -lstdc++ -lm -lpthread
rm -f "$O.o"
