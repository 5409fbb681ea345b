# Harness self-test: the scenario fails; its exit code and files still reach the host.
. /tt/lib.sh
result answer 42
exit 7
