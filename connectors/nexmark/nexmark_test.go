package nexmark

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// newSource builds a nexmark table with the given options (and a fixed
// first-event.time unless given).
func newSource(t testing.TB, kv ...string) *Source {
	t.Helper()
	opts := map[string]string{"connector": Identifier, OptFirstEventTime: "2024-01-01 00:00:00"}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	s, err := NewFactory().CreateSource(&connectors.TableContext{Name: "t", Options: opts, Physical: Schema, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Source)
}

func createErr(kv ...string) error {
	opts := map[string]string{"connector": Identifier}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	_, err := NewFactory().CreateSource(&connectors.TableContext{Name: "t", Options: opts, Physical: Schema, Loc: time.UTC})
	return err
}

// event is one generated row in a comparable form.
type event struct {
	index int64
	row   string
}

// readAll drains a reader, returning its rows as strings and the splits it
// reported done.
func readAll(t testing.TB, r exec.SourceReader, max int) []string {
	t.Helper()
	ctx := context.Background()
	if err := r.Open(ctx); err != nil {
		t.Fatal(err)
	}
	b := types.NewBatch(tableWidth, 64)
	var out []string
	for len(out) < max {
		b.Reset()
		res, err := r.Read(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			out = append(out, fmt.Sprint(row))
		}
		if res.End {
			break
		}
	}
	return out
}

func field(row types.Row, col, f int) types.Value { return row[col].RowOf()[f] }

// TestEventModel checks the event model against values worked out from
// nexmark's generator by hand: with the default proportions (1:3:46) event
// index i has id i+2, so ids 50k are people, 50k+1…50k+3 auctions and the
// rest bids; person and auction ids count up from 1001; with
// first-event.rate 1000 the event with index i happens (i+1) ms after the
// first event time.
func TestEventModel(t *testing.T) {
	s := newSource(t, OptFirstEventRate, "1000", OptNextEventRate, "1000", OptEventsNum, "5000")
	g := newGenerator(&s.cfg, seed)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	row := make(types.Row, tableWidth)
	var persons, auctions, bids int
	// The sequence starts at event id 2 (an auction): the first person is
	// id 50, person 1001; the first auction id 2, auction 1001.
	lastPerson, lastAuction := int64(firstPersonID), int64(firstAuctionID)
	for i := int64(0); i < 5000; i++ {
		clear(row)
		g.fill(row, i)
		id := i + 2
		kind := row[0].Int()
		wantKind := int64(KindBid)
		switch r := id % 50; {
		case r == 0:
			wantKind = KindPerson
		case r <= 3:
			wantKind = KindAuction
		}
		if kind != wantKind {
			t.Fatalf("event %d: kind %d, want %d", i, kind, wantKind)
		}
		for c := 1; c <= 3; c++ {
			if row[c].IsNull() != (c != int(kind)+1) {
				t.Fatalf("event %d of kind %d: column %d null=%v", i, kind, c, row[c].IsNull())
			}
		}
		wantTS := base + i + 1
		switch kind {
		case KindPerson:
			persons++
			lastPerson++
			if got := field(row, 1, 0).Int(); got != lastPerson {
				t.Fatalf("event %d: person id %d, want %d", i, got, lastPerson)
			}
			if got := field(row, 1, 6).Millis(); got != wantTS {
				t.Fatalf("event %d: person dateTime %d, want %d", i, got, wantTS)
			}
			if st := field(row, 1, 5).Str(); !slices.Contains(usStates, st) {
				t.Fatalf("event %d: state %q", i, st)
			}
			email := field(row, 1, 2).Str()
			if !strings.HasSuffix(email, ".com") || !strings.Contains(email, "@") {
				t.Fatalf("event %d: email %q", i, email)
			}
			if cc := field(row, 1, 3).Str(); len(cc) != 19 || cc[4] != ' ' {
				t.Fatalf("event %d: credit card %q", i, cc)
			}
		case KindAuction:
			auctions++
			lastAuction++
			if got := field(row, 2, 0).Int(); got != lastAuction {
				t.Fatalf("event %d: auction id %d, want %d", i, got, lastAuction)
			}
			dt, exp := field(row, 2, 5).Millis(), field(row, 2, 6).Millis()
			if dt != wantTS || exp <= dt {
				t.Fatalf("event %d: auction dateTime %d expires %d, want dateTime %d and a later expiry", i, dt, exp, wantTS)
			}
			if cat := field(row, 2, 8).Int(); cat < 10 || cat > 14 {
				t.Fatalf("event %d: category %d", i, cat)
			}
			if init, res := field(row, 2, 3).Int(), field(row, 2, 4).Int(); res < init {
				t.Fatalf("event %d: reserve %d below initial bid %d", i, res, init)
			}
			// A seller is a person created so far, or one of the next 10.
			if sel := field(row, 2, 7).Int(); sel < firstPersonID || sel > lastPerson+personIDLead {
				t.Fatalf("event %d: seller %d (last person %d)", i, sel, lastPerson)
			}
		case KindBid:
			bids++
			if got := field(row, 3, 5).Millis(); got != wantTS {
				t.Fatalf("event %d: bid dateTime %d, want %d", i, got, wantTS)
			}
			// A bid names an auction among the last 100 created or the next
			// 10; its bidder is 2000 + a person id (base 0) created so far or
			// one of the next 10 (nexmark-flink's double offset).
			if a := field(row, 3, 0).Int(); a < max(lastAuction-numInFlightAuctions, firstAuctionID) || a > lastAuction+auctionIDLead {
				t.Fatalf("event %d: bid auction %d (last auction %d)", i, a, lastAuction)
			}
			if b := field(row, 3, 1).Int(); b < 2*firstPersonID || b > lastPerson+firstPersonID+personIDLead {
				t.Fatalf("event %d: bidder %d (last person %d)", i, b, lastPerson)
			}
			if p := field(row, 3, 2).Int(); p < 100 || p > 100_000_000 {
				t.Fatalf("event %d: price %d", i, p)
			}
			if ex := field(row, 3, 6).Str(); len(ex) < 54 || len(ex) >= 82 {
				t.Fatalf("event %d: extra of %d bytes, want 54…81 (avg 100 - 32, ±20 %%)", i, len(ex))
			}
		}
	}
	// 5000 events are 100 epochs of 50: 100 people, 300 auctions, 4600 bids.
	if persons != 100 || auctions != 300 || bids != 4600 {
		t.Fatalf("persons %d, auctions %d, bids %d; want 100, 300, 4600", persons, auctions, bids)
	}
}

// TestHotItems checks the skew of nexmark's bids: with the default ratios,
// about half the bids go to the hot auction of the current hundred and
// three quarters come from its hot bidder.
func TestHotItems(t *testing.T) {
	s := newSource(t)
	g := newGenerator(&s.cfg, seed)
	row := make(types.Row, tableWidth)
	var bids, hotAuction, hotBidder int
	for i := int64(0); i < 100_000; i++ {
		clear(row)
		g.fill(row, i)
		if row[0].Int() != KindBid {
			continue
		}
		bids++
		id := i + 2
		if field(row, 3, 0).Int() == s.cfg.lastAuction(id)/100*100+firstAuctionID {
			hotAuction++
		}
		if field(row, 3, 1).Int() == s.cfg.lastPerson(id)/100*100+1+2*firstPersonID {
			hotBidder++
		}
	}
	// P(hot auction) = 1/2 plus the chance a random pick hits it; P(hot
	// bidder) = 3/4 plus the same. Bounds leave room for both.
	if f := float64(hotAuction) / float64(bids); f < 0.48 || f > 0.56 {
		t.Errorf("hot auction share %.3f, want about 0.5", f)
	}
	if f := float64(hotBidder) / float64(bids); f < 0.73 || f > 0.78 {
		t.Errorf("hot bidder share %.3f, want about 0.75", f)
	}
}

// TestSplitsPartitionTheSequence: at any parallelism the subtasks together
// produce exactly the events of one subtask, none twice.
func TestSplitsPartitionTheSequence(t *testing.T) {
	s := newSource(t, OptEventsNum, "1003")
	want := readAll(t, mustReader(t, s, 0, 1), 1<<20)
	if len(want) != 1003 {
		t.Fatalf("parallelism 1 produced %d events, want 1003", len(want))
	}
	for _, p := range []int{2, 3, 4} {
		var got []string
		for k := range p {
			got = append(got, readAll(t, mustReader(t, s, k, p), 1<<20)...)
		}
		if !sameMultiset(got, want) {
			t.Fatalf("parallelism %d: %d events, not the %d of parallelism 1", p, len(got), len(want))
		}
	}
}

func mustReader(t testing.TB, s *Source, k, p int) *reader {
	t.Helper()
	r, err := s.NewReader(k, p)
	if err != nil {
		t.Fatal(err)
	}
	return r.(*reader)
}

func sameMultiset(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestRescaledRestore: a job at parallelism 2 checkpoints mid-way, and is
// restored at 1, 3 and 5 (more subtasks than splits: the splits divide); the
// events before and after the checkpoint are the whole sequence, once each.
func TestRescaledRestore(t *testing.T) {
	const total = 2000
	s := newSource(t, OptEventsNum, fmt.Sprint(total))
	want := readAll(t, mustReader(t, s, 0, 1), 1<<20)
	for _, newP := range []int{1, 3, 5} {
		var got []string
		var positions [][]byte
		for k, n := range []int{300, 700} { // the subtasks are at different points
			r := mustReader(t, s, k, 2)
			got = append(got, readAll(t, r, n)...)
			pos, err := r.SnapshotPosition()
			if err != nil {
				t.Fatal(err)
			}
			positions = append(positions, pos)
		}
		// The restored job is planned again: another first-event time by
		// default, which the checkpointed one overrides.
		s2 := newSource(t, OptEventsNum, fmt.Sprint(total), OptFirstEventTime, "2030-01-01 00:00:00")
		for k := range newP {
			r := mustReader(t, s2, k, newP)
			merged, err := r.MergePositions(positions)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.RestorePosition(merged); err != nil {
				t.Fatal(err)
			}
			if newP > 2 && r.NumSplits() == 0 {
				t.Errorf("parallelism %d: subtask %d got no split", newP, k)
			}
			got = append(got, readAll(t, r, 1<<20)...)
		}
		if !sameMultiset(got, want) {
			t.Fatalf("restored at parallelism %d: %d events, not the %d of one uninterrupted run", newP, len(got), len(want))
		}
	}
}

// TestRestoreSameParallelism continues each subtask where it stopped.
func TestRestoreSameParallelism(t *testing.T) {
	s := newSource(t, OptEventsNum, "500")
	want := readAll(t, mustReader(t, s, 1, 2), 1<<20)
	r := mustReader(t, s, 1, 2)
	got := readAll(t, r, 64)
	pos, _ := r.SnapshotPosition()
	r2 := mustReader(t, newSource(t, OptEventsNum, "500", OptFirstEventTime, "2030-01-01 00:00:00"), 1, 2)
	if err := r2.RestorePosition(pos); err != nil {
		t.Fatal(err)
	}
	got = append(got, readAll(t, r2, 1<<20)...)
	if !slices.Equal(got, want) {
		t.Fatalf("restored subtask produced %d events, want the %d of an uninterrupted run in order", len(got), len(want))
	}
	if err := r2.RestorePosition([]byte{9, 1}); err == nil || !strings.Contains(err.Error(), "bad checkpointed position") {
		t.Fatalf("a garbage position: %v", err)
	}
}

// TestStopAtAndEventsNum: events.num bounds the sequence, stop-at ends it
// earlier; without either the source is unbounded.
func TestStopAtAndEventsNum(t *testing.T) {
	if n := len(readAll(t, mustReader(t, newSource(t, OptEventsNum, "300", OptStopAt, "120"), 0, 1), 1<<20)); n != 120 {
		t.Errorf("stop-at 120 of 300: %d events", n)
	}
	if n := len(readAll(t, mustReader(t, newSource(t, OptStopAt, "77"), 0, 1), 1<<20)); n != 77 {
		t.Errorf("stop-at 77 without events.num: %d events", n)
	}
	if s := newSource(t); s.Bounded() {
		t.Error("events.num 0 (unlimited) is bounded")
	}
	if s := newSource(t, OptEventsNum, "10", OptKeepAlive, "true"); s.Bounded() {
		t.Error("keep-alive source is bounded")
	}
}

// TestKeepAlive: after its events a keep-alive source waits instead of ending.
func TestKeepAlive(t *testing.T) {
	r := mustReader(t, newSource(t, OptEventsNum, "10", OptKeepAlive, "true"), 0, 1)
	ctx, cancel := context.WithCancel(context.Background())
	b := types.NewBatch(tableWidth, 64)
	res, err := r.Read(ctx, b)
	if err != nil || b.Len() != 10 || res.End {
		t.Fatalf("first read: %d rows, %+v, %v", b.Len(), res, err)
	}
	cancel()
	b.Reset()
	if res, err = r.Read(ctx, b); err != nil || res.End || b.Len() != 0 {
		t.Fatalf("after the events: %d rows, %+v, %v; want an empty read that does not end", b.Len(), res, err)
	}
}

// TestProportionsAndSizes: the proportions choose the event kinds and the
// average sizes the length of extra.
func TestProportionsAndSizes(t *testing.T) {
	s := newSource(t, OptPersonProportion, "1", OptAuctionProportion, "1", OptBidProportion, "0",
		OptPersonAvgSize, "1kb", OptAuctionAvgSize, "0b", OptBidAvgSize, "100b", OptEventsNum, "1000")
	kinds := map[int64]int{}
	g := newGenerator(&s.cfg, seed)
	row := make(types.Row, tableWidth)
	for i := int64(0); i < 1000; i++ {
		clear(row)
		g.fill(row, i)
		kinds[row[0].Int()]++
		switch row[0].Int() {
		case KindPerson:
			// Around 1024 bytes in all: extra is 1024 minus the rest ±20 %.
			if n := len(field(row, 1, 7).Str()); n < 600 || n > 1230 {
				t.Fatalf("person extra of %d bytes with person.avg-size 1kb", n)
			}
		case KindAuction:
			if n := len(field(row, 2, 9).Str()); n != 0 {
				t.Fatalf("auction extra of %d bytes with auction.avg-size 0b", n)
			}
		}
	}
	if kinds[KindPerson] != 500 || kinds[KindAuction] != 500 || kinds[KindBid] != 0 {
		t.Fatalf("kinds %v, want 500 people and 500 auctions", kinds)
	}
}

// TestRateShape: with two rates the inter-event delay alternates (SQUARE)
// every half period; with one rate it is constant.
func TestRateShape(t *testing.T) {
	s := newSource(t, OptFirstEventRate, "1000", OptNextEventRate, "100", OptRatePeriod, "20 s")
	c := &s.cfg
	base := c.baseTime
	// Steps of 10 s: 10 000 events 1 ms apart, then 1 000 events 10 ms apart.
	for _, tc := range []struct{ n, want int64 }{
		{0, 0}, {1, 1}, {9999, 9999}, {10000, 10000}, {10001, 10010}, {10999, 19990}, {11000, 20000}, {11001, 20001},
	} {
		if got := c.timestamp(tc.n) - base; got != tc.want {
			t.Errorf("SQUARE: event number %d at +%d ms, want +%d", tc.n, got, tc.want)
		}
	}
	sine := newSource(t, OptFirstEventRate, "1000", OptNextEventRate, "100", OptRatePeriod, "20 s", OptRateShape, "sine")
	if len(sine.cfg.delays) != 10 || sine.cfg.delays[0] != 1000 || sine.cfg.delays[5] != 10000 {
		t.Errorf("SINE delays %v: want 10 steps from 1 ms (1000/s) to 10 ms (100/s) at the middle", sine.cfg.delays)
	}
}

// TestMaxEmitSpeed: with max-emit-speed off (or rate.limited on) events are
// released when due (a lower bound on the time taken, which pacing
// guarantees; nothing bounds it from above).
func TestMaxEmitSpeed(t *testing.T) {
	for _, kv := range [][]string{{OptMaxEmitSpeed, "false"}, {OptRateLimited, "true"}} {
		// 200 events at 1000/s take at least 0.2 s (the first is due at once).
		r := mustReader(t, newSource(t, OptFirstEventRate, "1000", OptNextEventRate, "1000", OptEventsNum, "200", kv[0], kv[1]), 0, 1)
		start := time.Now()
		if n := len(readAll(t, r, 1<<20)); n != 200 {
			t.Fatalf("%v: %d events", kv, n)
		}
		if d := time.Since(start); d < 190*time.Millisecond {
			t.Fatalf("%v: 200 events at 1000/s paced in %v", kv, d)
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"rate.shape", "TRIANGLE"}, "Invalid value for option 'rate.shape'. Expected one of [SQUARE, SINE], but was: TRIANGLE"},
		{[]string{"first-event.rate", "0"}, "Invalid value for option 'first-event.rate'. Expected a positive integer, but was: 0"},
		{[]string{"bid.hot-ratio.bidders", "0"}, "'bid.hot-ratio.bidders'. Expected a positive integer"},
		{[]string{"person.proportion", "0", "auction.proportion", "0", "bid.proportion", "0"}, "at least one kind of event"},
		{[]string{"events.num", "-1"}, "Invalid value for option 'events.num'"},
		{[]string{"stop-at", "-2"}, "Invalid value for option 'stop-at'"},
		{[]string{"bid.avg-size", "lots"}, "Invalid value for option 'bid.avg-size'"},
		{[]string{"first-event.time", "yesterday"}, "Invalid value for option 'first-event.time'"},
		{[]string{"events", "10"}, "Unsupported options found for 'nexmark'"},
	} {
		err := createErr(tc.kv...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.kv, err, tc.want)
		}
	}
	bad := slices.Clone(Schema)
	bad = bad[:3]
	_, err := NewFactory().CreateSource(&connectors.TableContext{Name: "t", Options: map[string]string{"connector": Identifier}, Physical: bad})
	if err == nil || !strings.Contains(err.Error(), "produces the columns") {
		t.Errorf("a table without the bid column: %v", err)
	}
}

// TestFillAllocatesNothingPerRow: generating a batch allocates only its
// arena chunks, not per event.
func TestFillAllocatesNothingPerRow(t *testing.T) {
	s := newSource(t)
	r := mustReader(t, s, 0, 1)
	b := types.NewBatch(tableWidth, 1024)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(20, func() {
		b.Reset()
		if _, err := r.Read(ctx, b); err != nil {
			t.Fatal(err)
		}
	})
	// 1024 events take about 7.4 k nested values (under one 8 k chunk),
	// 1 k row headers (one chunk) and a few kB of strings: a handful of
	// chunks per batch, never one per row.
	if allocs > 8 {
		t.Fatalf("%.1f allocations per batch of 1024 events", allocs)
	}
}

func BenchmarkGenerator(b *testing.B) {
	s := newSource(b)
	r := mustReader(b, s, 0, 1)
	batch := types.NewBatch(tableWidth, types.DefaultBatchSize)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for n := 0; n < b.N; {
		batch.Reset()
		if _, err := r.Read(ctx, batch); err != nil {
			b.Fatal(err)
		}
		n += batch.Len()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	// Per core, as Nexmark counts: CPU time of the process (GC included).
	b.ReportMetric(float64(b.N)/(processCPU()-cpu0).Seconds(), "events/cpu-s")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHotSellers: with 'auction.hot-ratio.sellers' = 1 no seller is hot (a
// draw below 1 is always 0, so every seller is random); with the default 4
// three quarters of the auctions come from the hot seller of the hundred.
func TestHotSellers(t *testing.T) {
	share := func(s *Source) float64 {
		g := newGenerator(&s.cfg, seed)
		row := make(types.Row, tableWidth)
		var auctions, hot int
		for i := int64(0); i < 200_000; i++ {
			clear(row)
			g.fill(row, i)
			if row[0].Int() != KindAuction {
				continue
			}
			auctions++
			if field(row, 2, 7).Int() == s.cfg.lastPerson(i+2)/100*100+firstPersonID {
				hot++
			}
		}
		return float64(hot) / float64(auctions)
	}
	if f := share(newSource(t)); f < 0.74 || f > 0.77 {
		t.Errorf("default hot seller share %.3f, want about 0.75", f)
	}
	if f := share(newSource(t, OptAuctionHotRatioSeller, "1")); f > 0.01 {
		t.Errorf("hot seller share %.3f with %s 1, want about 0", f, OptAuctionHotRatioSeller)
	}
}

// TestSkipUnlessIn: a filter on event_type narrows what the readers
// generate to those kinds, and they are the same events, in the same order,
// as in the whole sequence. Over the event ids 2…5001 (default proportions
// 1:3:46, a person where id mod 50 = 0, auctions at 1…3) there are 100
// people, 300 auctions and 4600 bids.
func TestSkipUnlessIn(t *testing.T) {
	const total = 5000
	all := readAll(t, mustReader(t, newSource(t, OptEventsNum, fmt.Sprint(total)), 0, 1), 1<<20)
	ofKinds := func(kinds ...int64) []string {
		var out []string
		for i, row := range all {
			kind := int64(KindBid) // event index i has id i+2
			switch id := int64(i) + 2; {
			case id%50 == 0:
				kind = KindPerson
			case id%50 <= 3:
				kind = KindAuction
			}
			if slices.Contains(kinds, kind) {
				out = append(out, row)
			}
		}
		return out
	}
	for _, c := range []struct {
		kinds []int64
		want  int
	}{
		{[]int64{KindBid}, 4600},
		{[]int64{KindPerson}, 100},
		{[]int64{KindAuction, KindPerson}, 400},
		{[]int64{7}, 0}, // no such kind: the filter drops every event
	} {
		var values []types.Value
		for _, k := range c.kinds {
			values = append(values, types.Int(k))
		}
		s := newSource(t, OptEventsNum, fmt.Sprint(total))
		if !s.SkipUnlessIn(0, values) {
			t.Fatalf("the hint on event_type was not taken")
		}
		got := readAll(t, mustReader(t, s, 0, 1), 1<<20)
		if len(got) != c.want {
			t.Errorf("kinds %v: %d events, want %d", c.kinds, len(got), c.want)
		}
		if want := ofKinds(c.kinds...); !slices.Equal(got, want) {
			t.Errorf("kinds %v: not the events of those kinds of the whole sequence in order", c.kinds)
		}
		var split []string // three subtasks, the first restored mid-way
		r := mustReader(t, s, 0, 3)
		split = append(split, readAll(t, r, 10)...)
		pos, _ := r.SnapshotPosition()
		r = mustReader(t, s, 0, 3)
		if err := r.RestorePosition(pos); err != nil {
			t.Fatal(err)
		}
		split = append(split, readAll(t, r, 1<<20)...)
		for k := 1; k < 3; k++ {
			split = append(split, readAll(t, mustReader(t, s, k, 3), 1<<20)...)
		}
		if !sameMultiset(split, got) {
			t.Errorf("kinds %v at parallelism 3 with a restore: %d events, not the %d of parallelism 1", c.kinds, len(split), len(got))
		}
	}
	if newSource(t).SkipUnlessIn(3, []types.Value{types.Int(1)}) {
		t.Error("a hint on the bid column was taken")
	}
}
