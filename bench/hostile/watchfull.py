# 16384 minimal rings (fill the SIGBUS watch table) + 1 sparse ring whose header claims capacity 2^27
# (an 8 GiB file of holes, ~12 KB on disk)
import sys, os; sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__))); from cwlib import *
D=sys.argv[1]; CAP=int(sys.argv[2]) if len(sys.argv)>2 else 2**27
os.makedirs(D, exist_ok=True)
build(D+'/a-00000.cwring',[],[],capacity=1,head=0,clock=1,level=2)
data=open(D+'/a-00000.cwring','rb').read()
for i in range(1,16384):
    open(D+'/a-%05d.cwring'%i,'wb').write(data)
build(D+'/zz-huge.cwring',[],[],capacity=CAP,head=0,sparse=True,clock=1,level=2)
