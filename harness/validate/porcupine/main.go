// Command porcupine-check checks a recorded history of etcd key-value operations for
// linearizability with Porcupine (github.com/anishathalye/porcupine), the checker etcd's
// robustness tests use, and prints a JSON verdict on stdout.
//
// The history is the harness's oplog JSON (harness/validate/oplog.py):
//
//	{"format": "ha-harness/oplog/v1",
//	 "fields": ["client", "kind", "key", "value", "invoke", "ret", "ok", "revision", "result", "expect", "succeeded"],
//	 "ops": [[0, "put", "k", "v1", 0.10, 0.12, true, 7, null, null, null], ...]}
//
// Times are seconds on one clock. ok=false: the operation definitely had no effect (dropped).
// ok=null: indeterminate; a write that failed or timed out may or may not have taken effect,
// so, as in Porcupine's and etcd's own use, its return time is open (after every other
// operation) and its response unknown; an indeterminate read is dropped.
//
// The model is a key-value register per key (the history is partitioned by key): put, get,
// delete, and txn as compare-and-put (if value(key) == expect, or the key is absent when
// expect is null, then put(key, value); an else-branch read may be recorded in result).
// Revisions, when recorded, are checked too: a key's writes take strictly increasing
// revisions, and a read served at header revision R cannot see a write of a later revision.
//
// Usage:
//
//	porcupine-check [-history FILE] [-visualize OUT.html] [-visualize-always] [-timeout 60s]
//
// Exit status 0 whatever the verdict (it is in the JSON); 2 on unreadable input.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

const format = "ha-harness/oplog/v1"

// Most keys drawn in a visualisation of a failed check; each key is one partition.
const maxVisualizedKeys = 20

// Time the visualisation may take even when the check used up the deadline (it then shows
// the partial linearizations found so far).
const minVisualizeTime = 10 * time.Second

type kind uint8

const (
	kindGet kind = iota
	kindPut
	kindDelete
	kindTxn
)

var kindNames = map[string]kind{"get": kindGet, "put": kindPut, "delete": kindDelete, "txn": kindTxn}

type input struct {
	kind   kind
	key    string
	value  string // put, txn: the value written
	expect string // txn: the value compared against
	absent bool   // txn: compare "key absent" instead of a value
}

type output struct {
	unknown   bool   // indeterminate write: no response
	rev       int64  // header revision; 0 = not recorded
	hasResult bool   // get: always; delete: what it removed was recorded; txn: the else read was recorded
	found     bool   // the key existed (get, txn else read) / something was deleted (delete)
	value     string // the value read or deleted
	anyValue  bool   // delete: it removed the key, but which value was not recorded
	succeeded bool   // txn
}

// state of one key. rev is its mod revision (the revision of the last write), 0 when unknown
// (the last write was indeterminate, or there was none).
type state struct {
	exists bool
	value  string
	rev    int64
}

func readMatches(s state, out output) bool {
	if !out.hasResult {
		return true
	}
	if out.found != s.exists {
		return false
	}
	return !out.found || out.anyValue || out.value == s.value
}

// A read at header revision R cannot have seen a write of a later revision.
func notFromFuture(s state, rev int64) bool {
	return rev == 0 || s.rev == 0 || s.rev <= rev
}

// A write to a key takes a revision above that of the key's previous write.
func revisionAdvances(s state, rev int64) bool {
	return rev == 0 || s.rev == 0 || rev > s.rev
}

func step(st, in, out interface{}) (bool, interface{}) {
	s := st.(state)
	i := in.(input)
	o := out.(output)
	switch i.kind {
	case kindGet:
		return readMatches(s, o) && notFromFuture(s, o.rev), s
	case kindPut:
		if o.unknown {
			return true, state{exists: true, value: i.value}
		}
		return revisionAdvances(s, o.rev), state{exists: true, value: i.value, rev: o.rev}
	case kindDelete:
		if o.unknown {
			return true, state{}
		}
		if o.hasResult && !readMatches(s, o) {
			return false, s
		}
		// Deleting nothing leaves the revision where it is; deleting a key takes a new one.
		if o.rev != 0 && s.rev != 0 && (o.rev < s.rev || (s.exists && o.rev == s.rev)) {
			return false, s
		}
		return true, state{rev: o.rev}
	case kindTxn:
		cond := !s.exists
		if !i.absent {
			cond = s.exists && s.value == i.expect
		}
		if o.unknown {
			if cond {
				return true, state{exists: true, value: i.value}
			}
			return true, s
		}
		if o.succeeded != cond {
			return false, s
		}
		if o.succeeded {
			return revisionAdvances(s, o.rev), state{exists: true, value: i.value, rev: o.rev}
		}
		return readMatches(s, o) && notFromFuture(s, o.rev), s
	}
	return false, s
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func describeRead(o output) string {
	if !o.found {
		return "<absent>"
	}
	return quote(o.value)
}

func revSuffix(o output) string {
	if o.rev == 0 {
		return ""
	}
	return fmt.Sprintf(" @%d", o.rev)
}

func describeOperation(in, out interface{}) string {
	i := in.(input)
	o := out.(output)
	switch i.kind {
	case kindGet:
		return fmt.Sprintf("get(%s) -> %s%s", quote(i.key), describeRead(o), revSuffix(o))
	case kindPut:
		if o.unknown {
			return fmt.Sprintf("put(%s, %s) -> ? (indeterminate)", quote(i.key), quote(i.value))
		}
		return fmt.Sprintf("put(%s, %s) -> ok%s", quote(i.key), quote(i.value), revSuffix(o))
	case kindDelete:
		if o.unknown {
			return fmt.Sprintf("delete(%s) -> ? (indeterminate)", quote(i.key))
		}
		if o.hasResult && !o.found {
			return fmt.Sprintf("delete(%s) -> deleted nothing%s", quote(i.key), revSuffix(o))
		}
		if o.hasResult && o.anyValue {
			return fmt.Sprintf("delete(%s) -> deleted the key%s", quote(i.key), revSuffix(o))
		}
		if o.hasResult {
			return fmt.Sprintf("delete(%s) -> deleted %s%s", quote(i.key), describeRead(o), revSuffix(o))
		}
		return fmt.Sprintf("delete(%s) -> ok%s", quote(i.key), revSuffix(o))
	case kindTxn:
		cmp := "absent"
		if !i.absent {
			cmp = "== " + quote(i.expect)
		}
		head := fmt.Sprintf("txn(if %s %s then put %s)", quote(i.key), cmp, quote(i.value))
		switch {
		case o.unknown:
			return head + " -> ? (indeterminate)"
		case o.succeeded:
			return head + " -> succeeded" + revSuffix(o)
		case o.hasResult:
			return head + " -> failed, read " + describeRead(o) + revSuffix(o)
		default:
			return head + " -> failed" + revSuffix(o)
		}
	}
	return "<invalid>"
}

func describeState(st interface{}) string {
	s := st.(state)
	v := "<absent>"
	if s.exists {
		v = quote(s.value)
	}
	if s.rev != 0 {
		return fmt.Sprintf("%s @%d", v, s.rev)
	}
	return v
}

func hashState(st interface{}) uint64 {
	s := st.(state)
	h := fnv.New64a()
	if s.exists {
		h.Write([]byte{1})
	}
	h.Write([]byte(s.value))
	var b [8]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(s.rev >> (8 * i))
	}
	h.Write(b[:])
	return h.Sum64()
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	index := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		k := op.Input.(input).key
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

var model = porcupine.Model{
	Partition:         partitionByKey,
	Init:              func() interface{} { return state{} },
	Step:              step,
	Hash:              hashState,
	DescribeOperation: describeOperation,
	DescribeState:     describeState,
	DescribeOperationMetadata: func(m interface{}) string {
		if m == nil {
			return ""
		}
		return m.(string)
	},
}

// --- input ---------------------------------------------------------------------------------

type oplog struct {
	Format string          `json:"format"`
	Fields []string        `json:"fields"`
	Ops    [][]interface{} `json:"ops"` // decoded generically: one pass, much faster than per-field
}

type row struct {
	client    int
	kind      string
	key       string
	value     *string
	invoke    float64
	ret       *float64
	ok        *bool
	revision  *int64
	result    *string
	expect    *string
	succeeded *bool
	deleted   *int64
}

func asString(v interface{}) (*string, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &x, nil
	}
	return nil, fmt.Errorf("%v is not a string", v)
}

func asNumber(v interface{}) (*float64, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case float64:
		return &x, nil
	}
	return nil, fmt.Errorf("%v is not a number", v)
}

func asBool(v interface{}) (*bool, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return &x, nil
	}
	return nil, fmt.Errorf("%v is not a boolean", v)
}

func required(name string, p interface{}, err error) error {
	if err != nil {
		return err
	}
	switch x := p.(type) {
	case *string:
		if x == nil {
			return fmt.Errorf("%s is missing", name)
		}
	case *float64:
		if x == nil {
			return fmt.Errorf("%s is missing", name)
		}
	}
	return nil
}

func decodeRow(fields []string, values []interface{}) (row, error) {
	var r row
	if len(values) != len(fields) {
		return r, fmt.Errorf("%d values for %d fields", len(values), len(fields))
	}
	for i, f := range fields {
		v := values[i]
		var err error
		switch f {
		case "client":
			var n *float64
			n, err = asNumber(v)
			if err = required(f, n, err); err == nil {
				r.client = int(*n)
			}
		case "kind", "key":
			var s *string
			s, err = asString(v)
			if err = required(f, s, err); err == nil {
				if f == "kind" {
					r.kind = *s
				} else {
					r.key = *s
				}
			}
		case "invoke":
			var n *float64
			n, err = asNumber(v)
			if err = required(f, n, err); err == nil {
				r.invoke = *n
			}
		case "value":
			r.value, err = asString(v)
		case "result":
			r.result, err = asString(v)
		case "expect":
			r.expect, err = asString(v)
		case "ret":
			r.ret, err = asNumber(v)
		case "revision":
			var n *float64
			if n, err = asNumber(v); n != nil {
				rev := int64(*n)
				r.revision = &rev
			}
		case "deleted":
			var n *float64
			if n, err = asNumber(v); n != nil {
				d := int64(*n)
				r.deleted = &d
			}
		case "ok":
			r.ok, err = asBool(v)
		case "succeeded":
			r.succeeded, err = asBool(v)
		default:
			continue // a field this checker does not use
		}
		if err != nil {
			return r, fmt.Errorf("field %s: %v", f, err)
		}
	}
	return r, nil
}

type prepared struct {
	ops           []porcupine.Operation
	keys          int
	indeterminate int
	dropped       int
}

func nanos(seconds float64) int64 { return int64(math.Round(seconds * 1e9)) }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// prepare turns oplog rows into Porcupine operations: definite failures and indeterminate
// reads are dropped; indeterminate writes get an open return (after every other operation)
// and a client id of their own, because their client went on with later operations while
// they were, for all we know, still in flight.
func prepare(log oplog) (prepared, error) {
	var p prepared
	if log.Format != "" && log.Format != format {
		return p, fmt.Errorf("unknown history format %q (want %q)", log.Format, format)
	}
	if len(log.Fields) == 0 {
		return p, errors.New(`history has no "fields"`)
	}
	rows := make([]row, 0, len(log.Ops))
	clients := map[int]struct{}{}
	var last int64
	for n, raw := range log.Ops {
		r, err := decodeRow(log.Fields, raw)
		if err != nil {
			return p, fmt.Errorf("op #%d: %v", n, err)
		}
		if _, ok := kindNames[r.kind]; !ok {
			return p, fmt.Errorf("op #%d: unknown kind %q", n, r.kind)
		}
		if r.ok != nil && *r.ok && r.ret == nil {
			return p, fmt.Errorf("op #%d: ok without a return time", n)
		}
		rows = append(rows, r)
		clients[r.client] = struct{}{}
		if t := nanos(r.invoke); t > last {
			last = t
		}
		if r.ret != nil {
			if t := nanos(*r.ret); t > last {
				last = t
			}
		}
	}
	// Dense, zero-based client ids for the visualisation.
	ids := make([]int, 0, len(clients))
	for c := range clients {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	dense := make(map[int]int, len(ids))
	for i, c := range ids {
		dense[c] = i
	}
	nextID := len(ids)
	open := last + int64(time.Second) // "infinity": after every recorded time
	keys := map[string]struct{}{}
	for n, r := range rows {
		k := kindNames[r.kind]
		definite := r.ok != nil && *r.ok
		failed := r.ok != nil && !*r.ok
		if failed || (!definite && k == kindGet) {
			p.dropped++
			continue
		}
		in := input{kind: k, key: r.key, value: str(r.value)}
		if k == kindTxn {
			in.absent = r.expect == nil
			in.expect = str(r.expect)
		}
		var out output
		client := dense[r.client]
		ret := open
		if definite {
			ret = nanos(*r.ret)
			if r.revision != nil {
				out.rev = *r.revision
			}
			switch k {
			case kindGet:
				out.hasResult, out.found, out.value = true, r.result != nil, str(r.result)
			case kindDelete:
				if r.deleted != nil { // a count says whether the key was there, even when it removed nothing
					out.hasResult, out.found = true, *r.deleted > 0
					out.value, out.anyValue = str(r.result), r.result == nil
				} else {
					out.hasResult, out.found, out.value = r.result != nil, r.result != nil, str(r.result)
				}
			case kindTxn:
				out.succeeded = r.succeeded != nil && *r.succeeded
				if !out.succeeded && r.result != nil {
					out.hasResult, out.found, out.value = true, true, *r.result
				}
			}
		} else {
			out.unknown = true
			p.indeterminate++
			client = nextID
			nextID++
		}
		keys[r.key] = struct{}{}
		p.ops = append(p.ops, porcupine.Operation{
			ClientId: client,
			Input:    in,
			Call:     nanos(r.invoke),
			Output:   out,
			Return:   ret,
			Metadata: fmt.Sprintf("op #%d, client %d, invoked at %.6fs", n, r.client, r.invoke),
		})
	}
	p.keys = len(keys)
	return p, nil
}

// --- check ---------------------------------------------------------------------------------

type verdict struct {
	OK            bool     `json:"ok"`
	Result        string   `json:"result"` // Ok, Illegal or Unknown (timed out)
	Operations    int      `json:"operations"`
	Keys          int      `json:"keys"`
	Indeterminate int      `json:"indeterminate"`
	Dropped       int      `json:"dropped"`
	IllegalKeys   []string `json:"illegal_keys"`
	ElapsedS      float64  `json:"elapsed_s"`
	Visualization *string  `json:"visualization"`
	Porcupine     string   `json:"porcupine"`
}

// illegalKeys checks each key on its own (in parallel) to name the keys that are not
// linearizable; the whole-history check stops at the first one.
func illegalKeys(ops []porcupine.Operation, deadline time.Time) []string {
	parts := partitionByKey(ops)
	var mu sync.Mutex
	var bad []string
	work := make(chan []porcupine.Operation)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for part := range work {
				left := time.Until(deadline)
				if left <= 0 {
					continue
				}
				if porcupine.CheckOperationsTimeout(model, part, left) == porcupine.Illegal {
					mu.Lock()
					bad = append(bad, part[0].Input.(input).key)
					mu.Unlock()
				}
			}
		}()
	}
	for _, part := range parts {
		work <- part
	}
	close(work)
	wg.Wait()
	sort.Strings(bad)
	return bad
}

func visualize(ops []porcupine.Operation, keys []string, path string, timeout time.Duration) error {
	if keys != nil {
		want := map[string]struct{}{}
		for i, k := range keys {
			if i == maxVisualizedKeys {
				break
			}
			want[k] = struct{}{}
		}
		var sel []porcupine.Operation
		for _, op := range ops {
			if _, ok := want[op.Input.(input).key]; ok {
				sel = append(sel, op)
			}
		}
		ops = sel
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	return porcupine.VisualizePath(model, info, path)
}

// porcupineVersion is the Porcupine module this binary was built with (from go.mod's pin).
func porcupineVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/anishathalye/porcupine" {
				return dep.Path + " " + dep.Version
			}
		}
	}
	return "github.com/anishathalye/porcupine (unknown version)"
}

func run(stdin io.Reader, stdout, stderr io.Writer, args []string) int {
	fs := flag.NewFlagSet("porcupine-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	historyPath := fs.String("history", "-", "oplog JSON file; - for stdin")
	visPath := fs.String("visualize", "", "write Porcupine's HTML visualisation here when the history is not linearizable")
	always := fs.Bool("visualize-always", false, "write the visualisation whatever the verdict (needs -visualize)")
	timeout := fs.Duration("timeout", 0, "give up after this long (verdict Unknown); 0 = no limit")
	version := fs.Bool("version", false, "print the Porcupine version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *version {
		fmt.Fprintln(stdout, porcupineVersion())
		return 0
	}
	in := stdin
	if *historyPath != "-" {
		f, err := os.Open(*historyPath)
		if err != nil {
			fmt.Fprintf(stderr, "porcupine-check: %v\n", err)
			return 2
		}
		defer f.Close()
		in = f
	}
	var log oplog
	dec := json.NewDecoder(in)
	if err := dec.Decode(&log); err != nil {
		fmt.Fprintf(stderr, "porcupine-check: history is not oplog JSON: %v\n", err)
		return 2
	}
	p, err := prepare(log)
	if err != nil {
		fmt.Fprintf(stderr, "porcupine-check: %v\n", err)
		return 2
	}

	// One deadline for the whole run: the check, naming the illegal keys, the visualisation.
	started := time.Now()
	deadline := started.Add(24 * time.Hour)
	if *timeout > 0 {
		deadline = started.Add(*timeout)
	}
	res := porcupine.CheckOperationsTimeout(model, p.ops, *timeout)
	v := verdict{
		OK: res == porcupine.Ok, Result: string(res), Operations: len(p.ops), Keys: p.keys,
		Indeterminate: p.indeterminate, Dropped: p.dropped, IllegalKeys: []string{}, Porcupine: porcupineVersion(),
	}
	if res == porcupine.Illegal {
		v.IllegalKeys = illegalKeys(p.ops, deadline)
	}
	v.ElapsedS = time.Since(started).Seconds()
	if *visPath != "" && (res != porcupine.Ok || *always) {
		keys := v.IllegalKeys
		if *always || len(keys) == 0 {
			keys = nil // the whole history
		}
		left := time.Until(deadline)
		if left < minVisualizeTime {
			left = minVisualizeTime
		}
		if err := visualize(p.ops, keys, *visPath, left); err != nil {
			fmt.Fprintf(stderr, "porcupine-check: writing the visualisation: %v\n", err)
		} else {
			v.Visualization = visPath
		}
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "porcupine-check: %v\n", err)
		return 2
	}
	return 0
}

func main() {
	os.Exit(run(os.Stdin, os.Stdout, os.Stderr, os.Args[1:]))
}
