# Round one of each receive trial in a LOOM_DEBUG=1 app run (mpich-app-steady-debug.txt, at
# 3e373da): the host's fastest sample, after MPICH's 16 warm-up messages, over the as-is fastest.
# Input for a warm-up that stops where even a warm host would be ruled out (docs/model.md).
import re, sys
path = sys.argv[1] if len(sys.argv) > 1 else 'mpich-app-steady-debug.txt'
pattern = r'pid (\d+) trial: receive, same_node, (\d+)\+ bytes, by message (\d+): as is \((\w+)\) ([\d. ]+) us, host ([\d. ]+) us'
for line in open(path):
    m = re.search(pattern, line)
    if m:
        pid, size, by, current, as_is, host = m.groups()
        ratio = min(map(float, host.split())) / min(map(float, as_is.split()))
        print(f'pid {pid} {size:>8}+ B, by message {by}, as is {current}: host/as-is {ratio:.2f}')
