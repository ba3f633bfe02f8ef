package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultWatchEvery is how often the server looks for changed workflow
// files by default.
const DefaultWatchEvery = time.Second

// reloader keeps the workflows directory and the catalog in step: a
// goroutine that looks for changed files (and takes Config.ReloadOn), and
// the subscribers told of each change.
type reloader struct {
	mu     sync.Mutex // one reload at a time; Close takes it to end them
	closed bool
	cancel context.CancelFunc // ends the watching goroutine and its reload
	wg     sync.WaitGroup

	subMu sync.Mutex
	subs  map[int]func()
	next  int
}

// Reload reads the workflows directory again: each valid file whose
// source the server does not run yet becomes its workflow's current
// version for new starts (instances keep the version they started on);
// each file that does not load is logged with its positioned errors and
// returned, joined in a *WorkflowError, while the version it held stays
// current. A file removed from the directory leaves its workflow as it
// was until the server restarts, so that an editor replacing a file does
// not withdraw the workflow for a moment. The server calls it when the
// directory changes and on Config.ReloadOn; the subscribers of
// OnWorkflowsChanged are told when a current version changed. A reload
// that ctx ends keeps the files it had loaded by then.
func (s *Server) Reload(ctx context.Context) error {
	s.rl.mu.Lock()
	defer s.rl.mu.Unlock()
	if s.rl.closed || s.stopping.Load() {
		return ErrStopping
	}
	ws, errs, err := readDir(s.cfg.WorkflowsDir, s.cat)
	if err != nil {
		s.log.Error("server: workflows not reloaded", zap.Error(err))
		return err
	}
	changed := false
	defer func() {
		if changed {
			s.workflowsChanged()
		}
	}()
	for _, w := range ws {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := s.cat.add(w, true)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", w.File, err))
			continue
		case f != nil:
			s.metrics.engines.Watch(f.eng)
			changed = true
			s.log.Info("server: workflow version loaded: current for new instances", zap.String("workflow", w.Name),
				zap.Int("version", w.Version), zap.String("hash", w.Hash), zap.String("file", w.File))
		case s.cat.mark(w.Hash, true):
			changed = true
			s.log.Info("server: workflow version current again", zap.String("workflow", w.Name),
				zap.Int("version", w.Version), zap.String("hash", w.Hash), zap.String("file", w.File))
		}
		for _, h := range s.cat.currentOf(w.File) {
			if h != w.Hash && s.cat.mark(h, false) {
				changed = true
			}
		}
	}
	for _, err := range errs {
		s.log.Error("server: workflow file not loaded: the version it held stays current", zap.Error(err))
	}
	if len(errs) > 0 {
		return &WorkflowError{Dir: s.cfg.WorkflowsDir, Err: errors.Join(errs...)}
	}
	return nil
}

// OnWorkflowsChanged calls f after each reload that changed the workflows
// the server hosts or their current versions (GET /v1/workflows answers
// the new list by then), until stop is called. f runs on the goroutine
// that reloaded, one call at a time: it must not block, nor call Reload.
func (s *Server) OnWorkflowsChanged(f func()) (stop func()) {
	s.rl.subMu.Lock()
	defer s.rl.subMu.Unlock()
	if s.rl.subs == nil {
		s.rl.subs = map[int]func(){}
	}
	id := s.rl.next
	s.rl.next++
	s.rl.subs[id] = f
	return func() {
		s.rl.subMu.Lock()
		defer s.rl.subMu.Unlock()
		delete(s.rl.subs, id)
	}
}

func (s *Server) workflowsChanged() {
	s.rl.subMu.Lock()
	ids := make([]int, 0, len(s.rl.subs))
	for id := range s.rl.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fs := make([]func(), 0, len(ids))
	for _, id := range ids {
		fs = append(fs, s.rl.subs[id])
	}
	s.rl.subMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// startWatch starts the goroutine that reloads the workflows when a file
// of the directory changes (looked at every Config.WatchEvery) and at each
// signal of Config.ReloadOn.
func (s *Server) startWatch() {
	ctx, cancel := context.WithCancel(context.Background())
	s.rl.cancel = cancel
	s.rl.wg.Go(func() {
		var tick <-chan time.Time
		if s.cfg.WatchEvery > 0 {
			t := time.NewTicker(s.cfg.WatchEvery)
			defer t.Stop()
			tick = t.C
		}
		// The first look reloads: a file changed while the server started
		// is not missed.
		last := ""
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.cfg.ReloadOn:
				s.log.Info("server: reloading the workflows on signal")
				_ = s.Reload(ctx)
			case <-tick:
				if fp := fingerprint(s.cfg.WorkflowsDir); fp != last {
					last = fp
					_ = s.Reload(ctx)
				}
			}
		}
	})
}

// stopWatch ends the watching goroutine and a reload under way, and waits
// for them; later reloads are refused. Safe when none runs, and twice.
func (s *Server) stopWatch() {
	if s.rl.cancel != nil {
		s.rl.cancel()
	}
	s.rl.mu.Lock()
	s.rl.closed = true
	s.rl.mu.Unlock()
	s.rl.wg.Wait()
}

// fingerprint sums the names and contents of the workflow files of dir
// (or why it cannot be read): any change to one changes it. Contents
// rather than modification times, which some file systems keep to the
// second: two saves within one would look like one.
func fingerprint(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	h := sha256.New()
	for _, path := range workflowFiles(dir, entries) {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(h, "%s\x00error: %v\x00", path, err)
			continue
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s\x00%x\x00", path, sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}
