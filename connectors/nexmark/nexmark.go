// Package nexmark owns the 'nexmark' source connector: the events of the
// Nexmark benchmark (people, auctions and bids) with the options and the
// event model of nexmark-flink's table source, produced straight into row
// batches of the table of Nexmark's ddl_gen.sql.
//
// The event sequence is global and deterministic: event i depends only on i
// and the table's options (and the time of the first event), never on the
// parallelism. Source subtask k of p reads the events k, k+p, k+2p, … (one
// split); a job restored at another parallelism reassigns the checkpointed
// splits, dividing them further when there are more subtasks than splits,
// so no event is lost or read twice.
package nexmark

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/types"
)

// Identifier is the value of 'connector' that selects this factory.
const Identifier = "nexmark"

// Option keys: those of nexmark-flink's NexmarkSourceOptions, and
// first-event.time.
const (
	OptRateShape             = "rate.shape"
	OptRatePeriod            = "rate.period"
	OptRateLimited           = "rate.limited"
	OptFirstEventRate        = "first-event.rate"
	OptNextEventRate         = "next-event.rate"
	OptPersonAvgSize         = "person.avg-size"
	OptAuctionAvgSize        = "auction.avg-size"
	OptBidAvgSize            = "bid.avg-size"
	OptPersonProportion      = "person.proportion"
	OptAuctionProportion     = "auction.proportion"
	OptBidProportion         = "bid.proportion"
	OptBidHotRatioAuctions   = "bid.hot-ratio.auctions"
	OptBidHotRatioBidders    = "bid.hot-ratio.bidders"
	OptAuctionHotRatioSeller = "auction.hot-ratio.sellers"
	OptEventsNum             = "events.num"
	OptKeepAlive             = "keep-alive"
	OptStopAt                = "stop-at"
	OptMaxEmitSpeed          = "max-emit-speed"
	// OptFirstEventTime fixes the timestamp origin of the event sequence
	// ('yyyy-MM-dd HH:mm:ss[.SSS]', a TIMESTAMP(3) value); by default it is
	// the time the table is planned, as in nexmark-flink. Fixing it makes runs
	// repeatable.
	OptFirstEventTime = "first-event.time"
)

const (
	shapeSquare = "SQUARE"
	shapeSine   = "SINE"
)

// seed mixes into every event's random stream; a constant, so that two runs
// with the same first-event.time produce the same events.
const seed = 0x4e45584d41524b31

// unlimited is the limit of a sequence without end (events.num 0).
const unlimited = math.MaxInt64

// Factory creates nexmark sources.
type Factory struct{}

// NewFactory returns the nexmark factory.
func NewFactory() *Factory { return &Factory{} }

// Identifier implements connectors.Factory.
func (*Factory) Identifier() string { return Identifier }

// RequiredOptions implements connectors.Factory.
func (*Factory) RequiredOptions() []string { return nil }

// OptionalOptions implements connectors.Factory.
func (*Factory) OptionalOptions() []string {
	return []string{
		OptRateShape, OptRatePeriod, OptRateLimited, OptFirstEventRate, OptNextEventRate,
		OptPersonAvgSize, OptAuctionAvgSize, OptBidAvgSize,
		OptPersonProportion, OptAuctionProportion, OptBidProportion,
		OptBidHotRatioAuctions, OptBidHotRatioBidders, OptAuctionHotRatioSeller,
		OptEventsNum, OptKeepAlive, OptStopAt, OptMaxEmitSpeed, OptFirstEventTime,
	}
}

// Schema is the physical schema of the table of Nexmark's ddl_gen.sql, the
// only one the connector produces.
var Schema = func() types.Schema {
	f := func(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }
	str, long, ts := types.StringType, types.BigIntType, types.TimestampType(3)
	return types.Schema{
		{Name: "event_type", Type: types.IntType},
		{Name: "person", Type: types.RowType(
			f("id", long), f("name", str), f("emailAddress", str), f("creditCard", str),
			f("city", str), f("state", str), f("dateTime", ts), f("extra", str))},
		{Name: "auction", Type: types.RowType(
			f("id", long), f("itemName", str), f("description", str), f("initialBid", long),
			f("reserve", long), f("dateTime", ts), f("expires", ts), f("seller", long),
			f("category", long), f("extra", str))},
		{Name: "bid", Type: types.RowType(
			f("auction", long), f("bidder", long), f("price", long), f("channel", str),
			f("url", str), f("dateTime", ts), f("extra", str))},
	}
}()

// Source is a configured nexmark table.
type Source struct {
	name string
	cfg  genConfig
	// limit is the number of events of the sequence (unlimited: no end).
	limit     int64
	keepAlive bool
	paced     bool // emit events when due by their timestamps
	// kinds is the set (bit k: kind k) of the event kinds the readers
	// produce: all of them unless a filter on event_type narrowed it
	// (SkipUnlessIn). Skipped events still take their place in the
	// sequence, so the others are the same events at any setting.
	kinds uint8
}

// allKinds is the set of every event kind.
const allKinds = 1<<KindPerson | 1<<KindAuction | 1<<KindBid

// SkipUnlessIn implements connectors.SkippingSource: with a filter that
// keeps only some values of event_type (column 0), the readers do not
// generate the other kinds of events, which for a query on bids alone saves
// the people and auctions, and for one on people or auctions the bids.
func (s *Source) SkipUnlessIn(column int, values []types.Value) bool {
	if column != 0 {
		return false
	}
	var set uint8
	for _, v := range values {
		if v.K == types.KindInt && v.N >= KindPerson && v.N <= KindBid {
			set |= 1 << v.N
		}
	}
	s.kinds &= set
	return true
}

// CreateSource implements connectors.SourceFactory.
func (f *Factory) CreateSource(tc *connectors.TableContext) (connectors.ScanSource, error) {
	if err := connectors.ValidateOptions(tc, f); err != nil {
		return nil, err
	}
	if len(tc.Metadata) > 0 {
		return nil, fmt.Errorf("nexmark table %s: the nexmark connector has no metadata, but column '%s' declares METADATA",
			tc.Name, tc.Metadata[0].Name)
	}
	if err := checkSchema(tc); err != nil {
		return nil, err
	}
	opts := connectors.Options(tc.Options)
	s := &Source{name: tc.Name, kinds: allKinds}
	shape, err := opts.Enum(OptRateShape, []string{shapeSquare, shapeSine}, shapeSquare)
	if err != nil {
		return nil, err
	}
	period, err := opts.Duration(OptRatePeriod, 600*time.Second)
	if err != nil {
		return nil, err
	}
	if period < time.Second {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a duration of at least 1 s, but was: %s", OptRatePeriod, opts[OptRatePeriod])
	}
	limited, err := opts.Bool(OptRateLimited, false)
	if err != nil {
		return nil, err
	}
	maxSpeed, err := opts.Bool(OptMaxEmitSpeed, true)
	if err != nil {
		return nil, err
	}
	s.paced = limited || !maxSpeed
	if s.keepAlive, err = opts.Bool(OptKeepAlive, false); err != nil {
		return nil, err
	}
	positive := func(key string, def int) (int64, error) {
		v, err := opts.Int(key, def)
		if err == nil && v <= 0 {
			err = fmt.Errorf("Invalid value for option '%s'. Expected a positive integer, but was: %d", key, v)
		}
		return int64(v), err
	}
	nonNegative := func(key string, def int) (int64, error) {
		v, err := opts.Int(key, def)
		if err == nil && v < 0 {
			err = fmt.Errorf("Invalid value for option '%s'. Expected a non-negative integer, but was: %d", key, v)
		}
		return int64(v), err
	}
	first, err := positive(OptFirstEventRate, 10000)
	if err != nil {
		return nil, err
	}
	next, err := positive(OptNextEventRate, 10000)
	if err != nil {
		return nil, err
	}
	c := &s.cfg
	if c.personProportion, err = nonNegative(OptPersonProportion, 1); err != nil {
		return nil, err
	}
	if c.auctionProportion, err = nonNegative(OptAuctionProportion, 3); err != nil {
		return nil, err
	}
	if c.bidProportion, err = nonNegative(OptBidProportion, 46); err != nil {
		return nil, err
	}
	c.totalProportion = c.personProportion + c.auctionProportion + c.bidProportion
	if c.totalProportion == 0 {
		return nil, fmt.Errorf("nexmark table %s: '%s', '%s' and '%s' are all 0; at least one kind of event must be generated",
			tc.Name, OptPersonProportion, OptAuctionProportion, OptBidProportion)
	}
	for _, o := range []struct {
		key string
		def int
		dst *int
	}{
		{OptBidHotRatioAuctions, 2, &c.hotAuctionRatio},
		{OptBidHotRatioBidders, 4, &c.hotBiddersRatio},
		{OptAuctionHotRatioSeller, 4, &c.hotSellersRatio},
	} {
		v, err := positive(o.key, o.def)
		if err != nil {
			return nil, err
		}
		*o.dst = int(v)
	}
	for _, o := range []struct {
		key string
		def int64
		dst *int
	}{
		{OptPersonAvgSize, 200, &c.avgPersonSize},
		{OptAuctionAvgSize, 500, &c.avgAuctionSize},
		{OptBidAvgSize, 100, &c.avgBidSize},
	} {
		v, err := opts.MemorySize(o.key, o.def)
		if err != nil {
			return nil, err
		}
		if v > reusableExtraLen {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a memory size of at most 1mb, but was: %s", o.key, opts[o.key])
		}
		*o.dst = int(v)
	}
	if s.limit, err = opts.Long(OptEventsNum, 0); err != nil {
		return nil, err
	}
	if s.limit < 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a non-negative number (0: unlimited), but was: %d", OptEventsNum, s.limit)
	}
	stopAt, err := opts.Long(OptStopAt, -1)
	if err != nil {
		return nil, err
	}
	if stopAt < -1 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected -1 (no stop) or a non-negative number, but was: %d", OptStopAt, stopAt)
	}
	if s.limit == 0 {
		s.limit = unlimited
	}
	if stopAt >= 0 {
		s.limit = min(s.limit, stopAt)
	}
	c.baseTime = time.Now().UnixMilli()
	if v, ok := opts[OptFirstEventTime]; ok {
		t, err := parseTimestamp(v)
		if err != nil {
			return nil, fmt.Errorf("Invalid value for option '%s'. Expected a timestamp 'yyyy-MM-dd HH:mm:ss[.SSS]', but was: %s", OptFirstEventTime, v)
		}
		c.baseTime = t
	}
	c.setRates(first, next, shape, int64(period/time.Second))
	return s, nil
}

func parseTimestamp(v string) (int64, error) {
	v = strings.TrimSpace(v)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("not a timestamp: %q", v)
}

// checkSchema refuses a table whose physical columns are not those of
// ddl_gen.sql (column and field names compare ignoring case).
func checkSchema(tc *connectors.TableContext) error {
	ok := len(tc.Physical) == len(Schema)
	for i := 0; ok && i < len(Schema); i++ {
		ok = strings.EqualFold(tc.Physical[i].Name, Schema[i].Name) && sameType(tc.Physical[i].Type, Schema[i].Type)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("nexmark table %s: the nexmark connector produces the columns (%s) of Nexmark's ddl_gen.sql, but the table declares (%s)",
		tc.Name, schemaString(Schema), schemaString(tc.Physical))
}

func sameType(got, want types.Type) bool {
	if got.Root != want.Root || len(got.Fields) != len(want.Fields) {
		return false
	}
	switch got.Root {
	case types.RootVarChar:
		return got.Precision == types.MaxLength
	case types.RootTimestamp:
		return got.Precision == want.Precision
	}
	for i := range got.Fields {
		if !strings.EqualFold(got.Fields[i].Name, want.Fields[i].Name) || !sameType(got.Fields[i].Type, want.Fields[i].Type) {
			return false
		}
	}
	return true
}

func schemaString(s types.Schema) string {
	parts := make([]string, len(s))
	for i, c := range s {
		parts[i] = types.QuoteIdent(c.Name) + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

// Bounded implements connectors.ScanSource.
func (s *Source) Bounded() bool { return s.limit != unlimited && !s.keepAlive }

// ChangelogMode implements connectors.ScanSource.
func (s *Source) ChangelogMode() types.ChangelogMode { return types.InsertOnly }

// Parallelism implements connectors.ScanSource: the job's default, as
// nexmark-flink's source (one split per subtask).
func (s *Source) Parallelism(defaultParallelism int) int { return max(defaultParallelism, 1) }

// ReadableMetadata implements connectors.ScanSource.
func (s *Source) ReadableMetadata() map[string]types.Type { return nil }

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	if parallelism <= 0 || subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("nexmark table %s: invalid subtask %d of %d", s.name, subtask, parallelism)
	}
	return newReader(s, subtask, parallelism), nil
}
