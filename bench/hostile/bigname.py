import sys; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__))); from gen import make
# one 300 KB kernel name and one 300 KB NVTX step name, used by 1000 steps x 2 launches
N=int(sys.argv[2]) if len(sys.argv)>2 else 1000
make(sys.argv[1], nsteps=N, launches_per_step=2, kname=b'K'*300_000, stepname=b'S'*300_000)
