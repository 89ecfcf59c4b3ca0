"""One rank of the bad-input test under `gradwire run -n 2 --keep-going`: the ranks pass different codecs to one
compressed allreduce. Every rank must get gradwire.MismatchError with gradwire's message (not a hang or a
crash); prints "rank R raised MismatchError: ..." and exits 0, or exits 1."""
import sys

import numpy as np

import gradwire


def main():
    rt = gradwire.Runtime(text='[runtime]\ntimeout_s = 30\n')
    with gradwire.Comm(rt) as comm:
        codec = rt.codec("int8" if comm.rank == 0 else "fp16")
        x = np.ones(10000, dtype=np.float32)
        try:
            comm.allreduce_compressed(codec, x)
        except gradwire.MismatchError as e:
            print(f"rank {comm.rank} raised MismatchError: {e.message}", flush=True)
            codec.close()
            return 0
        except gradwire.Error as e:
            print(f"rank {comm.rank} raised {type(e).__name__} instead of MismatchError: {e}", flush=True)
            return 1
        print(f"rank {comm.rank}: no error for mismatched codecs", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
