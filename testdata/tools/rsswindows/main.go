// Command rsswindows tells which parts of a running Go binary's image are resident: per ELF section (and
// the parts of .gopclntab), in pages and in 64 KiB windows (the kernel maps file pages around a fault in
// such windows), and the resident text per package. Run it as root while the server runs, on an unstripped
// build with the release flags (symbols and DWARF are not loaded, so the layout is the release one):
//
//	CGO_ENABLED=0 go build -trimpath -o /tmp/appserver-sym ./cmd/appserver
//	go run ./testdata/tools/rsswindows -pid PID -bin /tmp/appserver-sym
package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	page   = 4096
	window = 64 << 10
)

type part struct {
	name   string
	lo, hi uint64
}

func main() {
	pid := flag.Int("pid", 0, "process to inspect")
	bin := flag.String("bin", "", "the process's binary, unstripped (for symbols)")
	top := flag.Int("pkgs", 25, "packages to list by resident text")
	flag.Parse()
	if *pid == 0 || *bin == "" {
		flag.Usage()
		os.Exit(2)
	}
	res, err := residentPages(*pid, *bin)
	if err != nil {
		log.Fatal(err)
	}
	f, err := elf.Open(*bin)
	if err != nil {
		log.Fatal(err)
	}
	var parts []part
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 || s.Addr == 0 {
			continue
		}
		if s.Name == ".gopclntab" {
			parts = append(parts, pclntabParts(s)...)
			continue
		}
		parts = append(parts, part{s.Name, s.Addr, s.Addr + s.Size})
	}
	fmt.Printf("%-22s %9s %9s %10s\n", "part", "size KiB", "res KiB", "64K wins")
	var total int
	for _, p := range parts {
		n, w, tw := count(res, p.lo, p.hi)
		total += n
		fmt.Printf("%-22s %9d %9d %5d/%-4d\n", p.name, (p.hi-p.lo)/1024, n*page/1024, w, tw)
	}
	fmt.Printf("%-22s %9s %9d\n", "total", "", total*page/1024)

	syms, err := f.Symbols()
	if err != nil {
		log.Fatal(err)
	}
	resKiB, sizeKiB := map[string]float64{}, map[string]float64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
			continue
		}
		pkg := pkgOf(s.Name)
		sizeKiB[pkg] += float64(s.Size) / 1024
		for a := s.Value; a < s.Value+s.Size; {
			next := min(a&^(page-1)+page, s.Value+s.Size)
			if res[a&^(page-1)] {
				resKiB[pkg] += float64(next-a) / 1024
			}
			a = next
		}
	}
	pkgs := make([]string, 0, len(resKiB))
	for p := range resKiB {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return resKiB[pkgs[i]] > resKiB[pkgs[j]] })
	fmt.Printf("\n%-50s %8s %8s\n", "package (text)", "res KiB", "size KiB")
	for _, p := range pkgs[:min(*top, len(pkgs))] {
		fmt.Printf("%-50s %8.1f %8.1f\n", p, resKiB[p], sizeKiB[p])
	}
}

// residentPages returns the page addresses of pid's mappings of bin that are present (/proc/PID/pagemap).
func residentPages(pid int, bin string) (map[uint64]bool, error) {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer maps.Close()
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pm.Close()
	res := map[uint64]bool{}
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != want {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		l, _ := strconv.ParseUint(lo, 16, 64)
		h, _ := strconv.ParseUint(hi, 16, 64)
		buf := make([]byte, (h-l)/page*8)
		if _, err := pm.ReadAt(buf, int64(l/page*8)); err != nil {
			return nil, err
		}
		for i := range (h - l) / page {
			if binary.LittleEndian.Uint64(buf[i*8:])&(1<<63) != 0 {
				res[l+i*page] = true
			}
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("no resident page of %s in process %d (not its binary?)", want, pid)
	}
	return res, sc.Err()
}

// pclntabParts splits .gopclntab by its header (runtime.pcHeader): function names, compilation units and
// files, pc-value tables, the function table, and the rest (funcdata, findfunctab).
func pclntabParts(s *elf.Section) []part {
	h := make([]byte, 8+8*8)
	if _, err := s.ReadAt(h, 0); err != nil {
		return []part{{s.Name, s.Addr, s.Addr + s.Size}}
	}
	off := func(i int) uint64 { return s.Addr + binary.LittleEndian.Uint64(h[8+8*i:]) }
	return []part{
		{"pclntab funcnames", off(3), off(4)},
		{"pclntab cu+files", off(4), off(6)},
		{"pclntab pctab", off(6), off(7)},
		{"pclntab functab+rest", off(7), s.Addr + s.Size},
	}
}

func count(res map[uint64]bool, lo, hi uint64) (pages, wins, totalWins int) {
	for a := lo &^ (page - 1); a < hi; a += page {
		if res[a] {
			pages++
		}
	}
	for w := lo &^ (window - 1); w < hi; w += window {
		totalWins++
		for a := w; a < w+window; a += page {
			if res[a] {
				wins++
				break
			}
		}
	}
	return pages, wins, totalWins
}

func pkgOf(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	slash := strings.LastIndexByte(name, '/')
	if dot := strings.IndexByte(name[slash+1:], '.'); dot >= 0 {
		return name[:slash+1+dot]
	}
	return name
}
