# Harness self-test: the guest kernel panics (the retry path of run.sh).
echo c > /proc/sysrq-trigger
