package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, 100 on every Linux ABI Go runs on).
const userHZ = 100

// cpuUse is the CPU time one throughput run cost, split by who spent it. CPU time is steadier than
// wall time on a shared machine: it does not grow while other work holds the cores.
type cpuUse struct {
	server time.Duration // the server's own threads
	cmd    time.Duration // the command (and any helper) the server ran and reaped
	client time.Duration // this process, reading and parsing the output
}

func (u cpuUse) total() time.Duration { return u.server + u.cmd + u.client }

func (u cpuUse) sub(v cpuUse) cpuUse {
	return cpuUse{server: u.server - v.server, cmd: u.cmd - v.cmd, client: u.client - v.client}
}

// cpuNow samples the CPU time of server pid (0: none, as for the raw pipe, whose command this
// process reaps itself) and of this process.
func cpuNow(pid int) (cpuUse, error) {
	var u cpuUse
	self, children, err := rusageCPU()
	if err != nil {
		return u, err
	}
	u.client = self
	if pid == 0 {
		u.cmd = children
		return u, nil
	}
	u.server, u.cmd, err = procCPU(pid)
	return u, err
}

// rusageCPU returns the user+system CPU time of this process and of its reaped children.
func rusageCPU() (self, children time.Duration, err error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, err
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, 0, err
	}
	return self, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// procCPU reads the user+system CPU time of pid's threads and of the children it has reaped from
// /proc/<pid>/stat.
func procCPU(pid int) (self, children time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU extracts utime+stime and cutime+cstime (fields 14 to 17) from a /proc/<pid>/stat line.
func parseProcStatCPU(s string) (self, children time.Duration, err error) {
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed /proc stat line %.100q", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("short /proc stat line %.100q", s)
	}
	var t [4]int64
	for k := range t {
		if t[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc stat field %d: %w", 14+k, err)
		}
	}
	tick := time.Second / userHZ
	return time.Duration(t[0]+t[1]) * tick, time.Duration(t[2]+t[3]) * tick, nil
}

// medianCPU is the run whose total is the median (nearest rank) of us; ok is false without runs.
func medianCPU(us []cpuUse) (cpuUse, bool) {
	if len(us) == 0 {
		return cpuUse{}, false
	}
	s := append([]cpuUse(nil), us...)
	sort.Slice(s, func(i, j int) bool { return s[i].total() < s[j].total() })
	return s[rank(len(s), 50)], true
}
