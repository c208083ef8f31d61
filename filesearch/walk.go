package filesearch

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// Entry is one file or directory found under a search root.
type Entry struct {
	Root  int    // index into the roots given to Walk
	Path  string // relative to that root, '/'-separated
	IsDir bool
}

// ignoreSet is the ignore rules in force in one directory: its own files' patterns plus its parent's.
// Rules follow ripgrep's: `.ignore` files everywhere, `.gitignore`, `.git/info/exclude` and the global
// git excludes only inside a git repository; `.ignore` decisions beat git's, deeper files beat shallower.
type ignoreSet struct {
	parent *ignoreSet
	depth  int          // path components of the directory the patterns are relative to
	ign    []ignoreRule // from .ignore
	git    []ignoreRule // from .gitignore (and, at a repository root, info/exclude + global)
	inRepo bool
	any    bool // this set or an ancestor has patterns
}

func (s *ignoreSet) ignored(comps []string, isDir bool) bool {
	if !s.any {
		return false
	}
	for cur := s; cur != nil; cur = cur.parent {
		if r := decide(cur.ign, comps[cur.depth:], isDir); r != noVerdict {
			return r == excluded
		}
	}
	for cur := s; cur != nil; cur = cur.parent {
		if r := decide(cur.git, comps[cur.depth:], isDir); r != noVerdict {
			return r == excluded
		}
	}
	return false
}

// decide applies one file's patterns: the last matching line wins.
func decide(ps []ignoreRule, comps []string, isDir bool) ignoreVerdict {
	for i := len(ps) - 1; i >= 0; i-- {
		if r := ps[i].match(comps, isDir); r != noVerdict {
			return r
		}
	}
	return noVerdict
}

// readPatterns reads an ignore file; a missing file yields nothing.
// Patterns are relative to the directory whose ignoreSet holds them (see ignoreSet.depth).
func readPatterns(file string) []ignoreRule {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []ignoreRule
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, `\`) // "\#x" and "\!x" name literal files
		ps = append(ps, parseIgnoreRule(line))
	}
	return ps
}

func splitAbs(p string) []string {
	p = strings.Trim(filepath.ToSlash(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// globalExcludes is git's default global excludes file.
func globalExcludes() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "ignore")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "git", "ignore")
	}
	return ""
}

// rootIgnores builds the rules in force at root from its ancestors: every ancestor's .ignore, and when
// root is inside a git repository, the .gitignore files from the repository root down plus the
// repository's info/exclude and the global excludes.
func rootIgnores(root string) *ignoreSet {
	var chain []string // root first, then its ancestors
	for d := root; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	repo := ""
	for _, d := range chain {
		if exists(filepath.Join(d, ".git")) {
			repo = d
			break
		}
	}
	var set *ignoreSet
	push := func(depth int, ign, git []ignoreRule, inRepo bool) {
		n := &ignoreSet{parent: set, depth: depth, ign: ign, git: git, inRepo: inRepo}
		n.any = len(ign) > 0 || len(git) > 0 || (set != nil && set.any)
		set = n
	}
	if repo != "" {
		dom := splitAbs(repo)
		var base []ignoreRule
		if g := globalExcludes(); g != "" {
			base = append(base, readPatterns(g)...)
		}
		base = append(base, readPatterns(filepath.Join(repo, ".git", "info", "exclude"))...)
		push(len(dom), nil, base, true)
	}
	// ancestors, outermost first (root's own files are read when the walk enters it)
	for i := len(chain) - 1; i >= 1; i-- {
		d := chain[i]
		dom := splitAbs(d)
		inRepo := repo != "" && (d == repo || strings.HasPrefix(d, repo+string(filepath.Separator)) || repo == "/")
		var git []ignoreRule
		if inRepo {
			git = readPatterns(filepath.Join(d, ".gitignore"))
		}
		push(len(dom), readPatterns(filepath.Join(d, ".ignore")), git, inRepo)
	}
	if set == nil {
		set = &ignoreSet{}
	}
	set.inRepo = repo != ""
	return set
}

type dirJob struct {
	root  int
	abs   string
	rel   string
	comps []string
	ign   *ignoreSet
}

// Walk visits every entry under roots that the ignore rules keep (hidden files included, symbolic
// links followed), calling visit from several goroutines with batches of entries. It stops early when
// ctx is done and returns ctx's error then.
func Walk(ctx context.Context, roots []string, visit func(batch []Entry)) error {
	workers := max(runtime.GOMAXPROCS(0), 2)
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		queue   []dirJob
		pending int
	)
	push := func(j dirJob) {
		mu.Lock()
		queue = append(queue, j)
		pending++
		mu.Unlock()
		cond.Signal()
	}
	absRoots := make([]string, len(roots))
	for i, r := range roots {
		a, err := filepath.Abs(r)
		if err != nil {
			a = r
		}
		absRoots[i] = filepath.Clean(a)
	}
	for i, a := range absRoots {
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			continue
		}
		push(dirJob{root: i, abs: a, comps: splitAbs(a), ign: rootIgnores(a)})
	}
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		cond.Broadcast()
		mu.Unlock()
	})
	defer stop()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []Entry
			var sc walkScratch
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 && ctx.Err() == nil {
					cond.Wait()
				}
				if len(queue) == 0 || ctx.Err() != nil {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				batch = walkDir(j, absRoots, batch[:0], push, &sc)
				if len(batch) > 0 {
					visit(batch)
				}
				mu.Lock()
				pending--
				done := pending == 0
				mu.Unlock()
				if done {
					cond.Broadcast()
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// walkScratch is one worker's reusable buffers.
type walkScratch struct {
	buf  []byte
	ents []dirent
}

// walkDir lists one directory, appending kept entries to batch and queueing subdirectories.
func walkDir(j dirJob, roots []string, batch []Entry, push func(dirJob), sc *walkScratch) []Entry {
	if sc.buf == nil {
		sc.buf = make([]byte, 32<<10)
	}
	ents, err := readDir(j.abs, sc.buf, sc.ents[:0])
	sc.ents = ents
	if err != nil && len(ents) == 0 {
		return batch
	}
	ign := j.ign
	hasGit := false
	for _, e := range ents {
		if e.name == ".git" {
			hasGit = true
			break
		}
	}
	inRepo := ign.inRepo || hasGit
	var own, git []ignoreRule
	for _, e := range ents {
		switch e.name {
		case ".ignore":
			own = readPatterns(filepath.Join(j.abs, ".ignore"))
		case ".gitignore":
			if inRepo {
				git = append(git, readPatterns(filepath.Join(j.abs, ".gitignore"))...)
			}
		}
	}
	if hasGit && !ign.inRepo {
		git = append(readPatterns(filepath.Join(j.abs, ".git", "info", "exclude")), git...)
	}
	if len(own) > 0 || len(git) > 0 || inRepo != ign.inRepo {
		ign = &ignoreSet{parent: ign, depth: len(j.comps), ign: own, git: git, inRepo: inRepo, any: ign.any || len(own) > 0 || len(git) > 0}
	}
	for _, e := range ents {
		name := e.name
		isDir := e.isDir
		if e.link {
			fi, err := os.Stat(filepath.Join(j.abs, name))
			if err != nil {
				continue
			}
			isDir = fi.IsDir()
			if isDir && symlinkLoops(filepath.Join(j.abs, name), j.abs) {
				continue
			}
		}
		var comps []string
		if ign.any {
			comps = append(j.comps[:len(j.comps):len(j.comps)], name)
			if ign.ignored(comps, isDir) {
				continue
			}
		}
		rel := name
		if j.rel != "" {
			rel = j.rel + "/" + name
		}
		root := j.root
		if len(roots) > 1 {
			root, rel = deepestRoot(roots, j.root, filepath.Join(j.abs, name), rel)
		}
		batch = append(batch, Entry{Root: root, Path: rel, IsDir: isDir})
		if isDir {
			if comps == nil {
				comps = append(j.comps[:len(j.comps):len(j.comps)], name)
			}
			childRel := name
			if j.rel != "" {
				childRel = j.rel + "/" + name
			}
			push(dirJob{root: j.root, abs: filepath.Join(j.abs, name), rel: childRel, comps: comps, ign: ign})
		}
	}
	return batch
}

// deepestRoot reports an entry relative to the deepest search root containing it (nested roots list
// their entries once per enclosing root walk, as the reference does).
func deepestRoot(roots []string, root int, abs, rel string) (int, string) {
	best, bestLen := root, len(roots[root])
	for i, r := range roots {
		if len(r) > bestLen && strings.HasPrefix(abs, r+"/") {
			best, bestLen = i, len(r)
		}
	}
	if best == root {
		return root, rel
	}
	return best, filepath.ToSlash(abs[bestLen+1:])
}

// symlinkLoops reports whether the directory link points at one of its own ancestors.
func symlinkLoops(link, parent string) bool {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return true
	}
	real, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return false
	}
	return real == target || strings.HasPrefix(real+"/", target+"/")
}
