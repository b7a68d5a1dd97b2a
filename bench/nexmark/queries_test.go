package nexmark

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	nx "github.com/flinksql/flinksql/connectors/nexmark"
	"github.com/flinksql/flinksql/session"
	"github.com/flinksql/flinksql/types"
)

// The correctness checks run each deterministic query on 100 000 events at
// 1 000 events per second of event time (100 s, so that windows, sessions
// and the day boundary at 2024-01-02 00:00 matter), at parallelism 1 and 4,
// and compare the rows the query ends with against a Go computation of the
// query's meaning over the same events, read from the connector itself.
const (
	checkEvents    = 100_000
	checkTPS       = 1000
	checkFirstTime = "2024-01-01 23:59:30"
)

type person struct {
	id                                    int64
	name, email, card, city, state, extra string
	dt                                    int64
}

type auction struct {
	id                  int64
	item, desc          string
	initialBid, reserve int64
	dt, expires         int64
	seller, category    int64
	extra               string
}

type bid struct {
	auction, bidder, price int64
	channel, url           string
	dt                     int64
	extra                  string
}

type events struct {
	persons  []person
	auctions []auction
	bids     []bid
}

// generate reads the check's events from a nexmark reader, configured as
// ddl_gen.sql configures the table.
func generate(t *testing.T) *events {
	t.Helper()
	opts := map[string]string{
		"connector": "nexmark", "first-event.rate": strconv.Itoa(checkTPS), "next-event.rate": strconv.Itoa(checkTPS),
		"events.num": strconv.Itoa(checkEvents), "person.proportion": "1", "auction.proportion": "3", "bid.proportion": "46",
		"first-event.time": checkFirstTime,
	}
	src, err := nx.NewFactory().CreateSource(&connectors.TableContext{Name: "datagen", Options: opts, Physical: nx.Schema, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.NewReader(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := &events{}
	b := types.NewBatch(4, types.DefaultBatchSize)
	for {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			switch row[0].Int() {
			case nx.KindPerson:
				p := row[1].RowOf()
				ev.persons = append(ev.persons, person{p[0].Int(), p[1].Str(), p[2].Str(), p[3].Str(), p[4].Str(), p[5].Str(), p[7].Str(), p[6].Millis()})
			case nx.KindAuction:
				a := row[2].RowOf()
				ev.auctions = append(ev.auctions, auction{a[0].Int(), a[1].Str(), a[2].Str(), a[3].Int(), a[4].Int(), a[5].Millis(), a[6].Millis(), a[7].Int(), a[8].Int(), a[9].Str()})
			case nx.KindBid:
				x := row[3].RowOf()
				ev.bids = append(ev.bids, bid{x[0].Int(), x[1].Int(), x[2].Int(), x[3].Str(), x[4].Str(), x[5].Millis(), x[6].Str()})
			}
		}
		if res.End {
			break
		}
	}
	if n := len(ev.persons) + len(ev.auctions) + len(ev.bids); n != checkEvents {
		t.Fatalf("the reader produced %d events, want %d", n, checkEvents)
	}
	return ev
}

// Rendering of expected values, as FormatSQL renders the engine's.
func ts(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

// dec3 renders v/1000 with three decimals (0.908 * price).
func dec3(v int64) string { return fmt.Sprintf("%d.%03d", v/1000, v%1000) }

func row(vals ...string) string { return strings.Join(vals, " | ") }

func day(ms int64) string  { return time.UnixMilli(ms).UTC().Format("2006-01-02") }
func hhmm(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// window returns the start of the tumbling window of size ms holding t.
func window(t, size int64) int64 { return t - ((t%size)+size)%size }

const tenSeconds = 10_000

// check is one query's correctness check.
type check struct {
	query string
	// project, when set, compares only these columns (the others depend on
	// the order ties are met in).
	project []int
	want    func(ev *events) []string
}

var checks = []check{
	{query: "q0", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), ts(b.dt), b.extra))
		}
		return out
	}},
	{query: "q1", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			out = append(out, row(i64(b.auction), i64(b.bidder), dec3(b.price*908), ts(b.dt), b.extra))
		}
		return out
	}},
	{query: "q2", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			if b.auction%123 == 0 {
				out = append(out, row(i64(b.auction), i64(b.price)))
			}
		}
		return out
	}},
	{query: "q3", want: func(ev *events) (out []string) {
		people := map[int64]person{}
		for _, p := range ev.persons {
			if p.state == "OR" || p.state == "ID" || p.state == "CA" {
				people[p.id] = p
			}
		}
		for _, a := range ev.auctions {
			if p, ok := people[a.seller]; ok && a.category == 10 {
				out = append(out, row(p.name, p.city, p.state, i64(a.id)))
			}
		}
		return out
	}},
	{query: "q4", want: func(ev *events) (out []string) {
		final := bidsInAuction(ev, func(a auction, bs []bid) (int64, bool) {
			if len(bs) == 0 {
				return 0, false
			}
			m := bs[0].price
			for _, b := range bs {
				m = max(m, b.price)
			}
			return m, true
		})
		sum, n := map[int64]int64{}, map[int64]int64{}
		for _, a := range ev.auctions {
			if f, ok := final[a.id]; ok {
				sum[a.category] += f
				n[a.category]++
			}
		}
		for c := range sum {
			out = append(out, row(i64(c), i64(sum[c]/n[c]))) // AVG of BIGINT is a BIGINT
		}
		return out
	}},
	{query: "q5", want: func(ev *events) (out []string) {
		// HOP of 10 s sliding by 2 s: a bid at t is in the windows
		// starting at the multiples of 2 s in (t - 10 s, t].
		const slide, size = 2_000, tenSeconds
		type key struct{ start, auction int64 }
		counts := map[key]int64{}
		for _, b := range ev.bids {
			for s := window(b.dt, slide); s > b.dt-size; s -= slide {
				counts[key{s, b.auction}]++
			}
		}
		maxn := map[int64]int64{} // window start → most bids of an auction
		for k, n := range counts {
			maxn[k.start] = max(maxn[k.start], n)
		}
		for k, n := range counts {
			if n >= maxn[k.start] {
				out = append(out, row(i64(k.auction), i64(n)))
			}
		}
		return out
	}},
	{query: "q7", want: func(ev *events) (out []string) {
		maxPrice := map[int64]int64{} // window end → max price
		for _, b := range ev.bids {
			end := window(b.dt, tenSeconds) + tenSeconds
			maxPrice[end] = max(maxPrice[end], b.price)
		}
		for _, b := range ev.bids {
			for end, m := range maxPrice {
				if b.price == m && b.dt >= end-tenSeconds && b.dt <= end {
					out = append(out, row(i64(b.auction), i64(b.price), i64(b.bidder), ts(b.dt), b.extra))
				}
			}
		}
		return out
	}},
	{query: "q8", want: func(ev *events) (out []string) {
		type key struct{ id, start int64 }
		sellers := map[key]bool{}
		for _, a := range ev.auctions {
			sellers[key{a.seller, window(a.dt, tenSeconds)}] = true
		}
		seen := map[string]bool{}
		for _, p := range ev.persons {
			k := key{p.id, window(p.dt, tenSeconds)}
			r := row(i64(p.id), p.name, ts(k.start))
			if sellers[k] && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
		return out
	}},
	{query: "q9", want: func(ev *events) (out []string) {
		byID := map[int64]auction{}
		for _, a := range ev.auctions {
			byID[a.id] = a
		}
		top := bidsInAuction(ev, func(a auction, bs []bid) (bid, bool) {
			if len(bs) == 0 {
				return bid{}, false
			}
			best := bs[0]
			for _, b := range bs[1:] {
				if b.price > best.price || b.price == best.price && b.dt < best.dt {
					best = b
				}
			}
			return best, true
		})
		for id, b := range top {
			a := byID[id]
			out = append(out, row(i64(a.id), a.item, a.desc, i64(a.initialBid), i64(a.reserve), ts(a.dt), ts(a.expires),
				i64(a.seller), i64(a.category), a.extra, i64(b.auction), i64(b.bidder), i64(b.price), ts(b.dt), b.extra))
		}
		return out
	}},
	{query: "q10", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), ts(b.dt), b.extra, day(b.dt), hhmm(b.dt)))
		}
		return out
	}},
	{query: "q11", want: func(ev *events) (out []string) {
		byBidder := map[int64][]int64{}
		for _, b := range ev.bids {
			byBidder[b.bidder] = append(byBidder[b.bidder], b.dt)
		}
		for bidder, times := range byBidder {
			slices.Sort(times)
			start, last, n := times[0], times[0], int64(1)
			emit := func() { out = append(out, row(i64(bidder), i64(n), ts(start), ts(last+tenSeconds))) }
			for _, t := range times[1:] {
				if t >= last+tenSeconds { // the gap closed the session
					emit()
					start, n = t, 0
				}
				last = t
				n++
			}
			emit()
		}
		return out
	}},
	{query: "q13_filesystem", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), ts(b.dt), i64(b.auction%10000)))
		}
		return out
	}},
	{query: "q14_no_udf", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			p := b.price * 908
			if p <= 1_000_000_000 || p >= 50_000_000_000 {
				continue
			}
			h := time.UnixMilli(b.dt).UTC().Hour()
			kind := "otherTime"
			switch {
			case h >= 8 && h <= 18:
				kind = "dayTime"
			case h <= 6 || h >= 20:
				kind = "nightTime"
			}
			out = append(out, row(i64(b.auction), i64(b.bidder), dec3(p), kind, ts(b.dt), b.extra, i64(int64(strings.Count(b.extra, "c")))))
		}
		return out
	}},
	{query: "q15", want: func(ev *events) []string {
		return rankCounts(ev, func(b bid) string { return day(b.dt) }, false)
	}},
	{query: "q16", want: func(ev *events) []string {
		return rankCounts(ev, func(b bid) string { return b.channel + " | " + day(b.dt) }, true)
	}},
	{query: "q17", want: func(ev *events) (out []string) {
		type key struct {
			auction int64
			day     string
		}
		type agg struct{ n, r1, r2, r3, lo, hi, sum int64 }
		aggs := map[key]*agg{}
		for _, b := range ev.bids {
			k := key{b.auction, day(b.dt)}
			a := aggs[k]
			if a == nil {
				a = &agg{lo: math.MaxInt64, hi: math.MinInt64}
				aggs[k] = a
			}
			a.n++
			switch {
			case b.price < 10000:
				a.r1++
			case b.price < 1000000:
				a.r2++
			default:
				a.r3++
			}
			a.lo, a.hi, a.sum = min(a.lo, b.price), max(a.hi, b.price), a.sum+b.price
		}
		for k, a := range aggs {
			out = append(out, row(i64(k.auction), k.day, i64(a.n), i64(a.r1), i64(a.r2), i64(a.r3), i64(a.lo), i64(a.hi), i64(a.sum/a.n), i64(a.sum)))
		}
		return out
	}},
	{query: "q18", want: func(ev *events) (out []string) {
		type key struct{ bidder, auction int64 }
		last := map[key]bid{}
		for _, b := range ev.bids {
			k := key{b.bidder, b.auction}
			if l, ok := last[k]; !ok || b.dt > l.dt {
				last[k] = b
			}
		}
		for _, b := range last {
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), b.channel, b.url, ts(b.dt), b.extra))
		}
		return out
	}},
	// Which of two bids of equal price ranks first depends on the order
	// they arrive in; the auctions, prices and ranks do not.
	{query: "q19", project: []int{0, 2, 7}, want: func(ev *events) (out []string) {
		prices := map[int64][]int64{}
		for _, b := range ev.bids {
			prices[b.auction] = append(prices[b.auction], b.price)
		}
		for a, ps := range prices {
			slices.SortFunc(ps, func(x, y int64) int { return cmp.Compare(y, x) })
			for i, p := range ps[:min(len(ps), 10)] {
				out = append(out, row(i64(a), i64(p), i64(int64(i+1))))
			}
		}
		return out
	}},
	{query: "q20", want: func(ev *events) (out []string) {
		byID := map[int64]auction{}
		for _, a := range ev.auctions {
			if a.category == 10 {
				byID[a.id] = a
			}
		}
		for _, b := range ev.bids {
			if a, ok := byID[b.auction]; ok {
				out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), b.channel, b.url, ts(b.dt), b.extra,
					a.item, a.desc, i64(a.initialBid), i64(a.reserve), ts(a.dt), ts(a.expires), i64(a.seller), i64(a.category), a.extra))
			}
		}
		return out
	}},
	{query: "q21", want: func(ev *events) (out []string) {
		re := regexp.MustCompile(`(&|^)channel_id=([^&]*)`)
		for _, b := range ev.bids {
			id := ""
			switch strings.ToLower(b.channel) {
			case "apple":
				id = "0"
			case "google":
				id = "1"
			case "facebook":
				id = "2"
			case "baidu":
				id = "3"
			default:
				m := re.FindStringSubmatch(b.url)
				if m == nil {
					continue
				}
				id = m[2]
			}
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), b.channel, id))
		}
		return out
	}},
	{query: "q22", want: func(ev *events) (out []string) {
		for _, b := range ev.bids {
			parts := strings.Split(b.url, "/")
			part := func(i int) string {
				if i < len(parts) {
					return parts[i]
				}
				return "NULL"
			}
			out = append(out, row(i64(b.auction), i64(b.bidder), i64(b.price), b.channel, part(3), part(4), part(5)))
		}
		return out
	}},
}

// bidsInAuction applies f to every auction and the bids on it made between
// its creation and its expiry (both included), keeping f's results.
func bidsInAuction[T any](ev *events, f func(auction, []bid) (T, bool)) map[int64]T {
	byAuction := map[int64][]bid{}
	for _, b := range ev.bids {
		byAuction[b.auction] = append(byAuction[b.auction], b)
	}
	out := map[int64]T{}
	for _, a := range ev.auctions {
		var in []bid
		for _, b := range byAuction[a.id] {
			if b.dt >= a.dt && b.dt <= a.expires {
				in = append(in, b)
			}
		}
		if v, ok := f(a, in); ok {
			out[a.id] = v
		}
	}
	return out
}

// rankCounts is q15 (per day) and q16 (per channel and day, with the latest
// minute): bids, bidders and auctions in all and per price rank.
func rankCounts(ev *events, group func(bid) string, minute bool) (out []string) {
	type agg struct {
		bids              [4]int64
		bidders, auctions [4]map[int64]bool
		minute            string
	}
	aggs := map[string]*agg{}
	for _, b := range ev.bids {
		k := group(b)
		a := aggs[k]
		if a == nil {
			a = &agg{}
			for i := range 4 {
				a.bidders[i], a.auctions[i] = map[int64]bool{}, map[int64]bool{}
			}
			aggs[k] = a
		}
		rank := 3
		switch {
		case b.price < 10000:
			rank = 1
		case b.price < 1000000:
			rank = 2
		}
		for _, i := range []int{0, rank} {
			a.bids[i]++
			a.bidders[i][b.bidder] = true
			a.auctions[i][b.auction] = true
		}
		a.minute = max(a.minute, hhmm(b.dt))
	}
	for k, a := range aggs {
		vals := []string{k}
		if minute {
			vals = append(vals, a.minute)
		}
		for i := range 4 {
			vals = append(vals, i64(a.bids[i]))
		}
		for i := range 4 {
			vals = append(vals, i64(int64(len(a.bidders[i]))))
		}
		for i := range 4 {
			vals = append(vals, i64(int64(len(a.auctions[i]))))
		}
		out = append(out, row(vals...))
	}
	return out
}

// runQuery runs the query's SELECT and returns the rows it ends with
// (its changelog applied), each rendered as FormatSQL renders values.
func runSelect(t *testing.T, query string, parallelism int, project []int) []string {
	t.Helper()
	home := t.TempDir()
	sideInput, err := writeSideInput(home)
	if err != nil {
		t.Fatal(err)
	}
	sql, err := script(query, params{events: checkEvents, tps: checkTPS, firstEventTime: checkFirstTime, sideInput: sideInput, flinkHome: home})
	if err != nil {
		t.Fatal(err)
	}
	insert := regexp.MustCompile(`(?i)INSERT INTO nexmark_q\d+\s`).FindStringIndex(sql)
	if insert == nil {
		t.Fatalf("%s: no INSERT INTO nexmark_qN", query)
	}
	ddl, sel := sql[:insert[0]], strings.TrimRight(strings.TrimSpace(sql[insert[1]:]), ";")
	sess, err := session.New(session.Options{Config: map[string]string{
		"parallelism.default": strconv.Itoa(parallelism), "table.local-time-zone": "UTC",
		"state.backend.type": *flagBackend,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx := context.Background()
	if err := execute(ctx, sess, ddl); err != nil {
		t.Fatal(err)
	}
	res, err := sess.Execute(ctx, sel)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	q := res[len(res)-1].Query
	defer q.Cancel()
	counts := map[string]int{}
	for {
		changes, err := q.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		for _, c := range changes {
			cols := make([]string, 0, len(c.Row))
			for i, v := range c.Row {
				if project == nil || slices.Contains(project, i) {
					cols = append(cols, types.FormatSQL(v, q.Schema[i].Type, time.UTC))
				}
			}
			r := row(cols...)
			if c.Kind.IsAccumulate() {
				counts[r]++
			} else {
				counts[r]--
			}
		}
	}
	var out []string
	for r, n := range counts {
		if n < 0 {
			t.Fatalf("%s: row retracted more often than added: %s", query, r)
		}
		for range n {
			out = append(out, r)
		}
	}
	return out
}

// TestQueries checks every deterministic query that runs against its
// reference computation, at parallelism 1 and 4.
func TestQueries(t *testing.T) {
	ev := generate(t)
	for _, c := range checks {
		want := c.want(ev)
		sort.Strings(want)
		if len(want) == 0 {
			t.Fatalf("%s: the reference has no rows; the check would prove nothing", c.query)
		}
		for _, p := range checkParallelisms(t) {
			t.Run(fmt.Sprintf("%s/p%d", c.query, p), func(t *testing.T) {
				got := runSelect(t, c.query, p, c.project)
				sort.Strings(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%d rows, want %d\n%s", len(got), len(want), diff(got, want))
				}
			})
		}
	}
}

var flagCheckParallelism = flag.String("nexmark.check-parallelism", "1,4", "parallelisms TestQueries runs each query at")

func checkParallelisms(t *testing.T) []int {
	var ps []int
	for _, f := range strings.Split(*flagCheckParallelism, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || p < 1 {
			t.Fatalf("-nexmark.check-parallelism %q: want positive integers separated by commas", *flagCheckParallelism)
		}
		ps = append(ps, p)
	}
	return ps
}

// diff shows the first rows only one side has.
func diff(got, want []string) string {
	count := func(rows []string) map[string]int {
		m := map[string]int{}
		for _, r := range rows {
			m[r]++
		}
		return m
	}
	g, w := count(got), count(want)
	var b strings.Builder
	n := 0
	for _, r := range want {
		if g[r] < w[r] && n < 5 {
			fmt.Fprintf(&b, "missing: %s\n", r)
			g[r]++
			n++
		}
	}
	n = 0
	for _, r := range got {
		if w[r] < g[r] && n < 5 {
			fmt.Fprintf(&b, "unexpected: %s\n", r)
			w[r]++
			n++
		}
	}
	return b.String()
}
