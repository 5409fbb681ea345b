//! Energy: power model and OS backends (cpufreq, idle control, energy readout).
