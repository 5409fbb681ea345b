# Harness self-test: the scenario never finishes (the hang path of run.sh).
sleep 100000
