# Threads that share a queue.Queue: half produce the numbers 0..ITEMS-1, half consume them and
# sum what they got. The README profiles it under contend run (its GIL is the lock that waits).
# Usage: python3 queue_threads.py THREADS ITEMS
import sys, threading, queue
threads, items = int(sys.argv[1]), int(sys.argv[2])
q = queue.Queue(maxsize=64)
def produce(first, step):
    for i in range(first, items, step):
        q.put(i)
def consume(out):
    s = 0
    while True:
        i = q.get()
        if i < 0:
            break
        s += i
    out.append(s)
half = threads // 2
sums = []
ps = [threading.Thread(target=produce, args=(k, half)) for k in range(half)]
cs = [threading.Thread(target=consume, args=(sums,)) for _ in range(half)]
for t in ps + cs: t.start()
for t in ps: t.join()
for _ in cs: q.put(-1)
for t in cs: t.join()
print("sum", sum(sums))
