package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flinksql/flinksql/connectors"
	"github.com/flinksql/flinksql/exec"
	"github.com/flinksql/flinksql/formats"
	"github.com/flinksql/flinksql/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Source is a configured kafka or upsert-kafka table being read.
type Source struct {
	cfg      *tableConfig
	metaKeys []string
	// formatMeta are the value format's metadata keys the table reads
	// (without 'value.'), in the order the decoder fills them; metaFormat[j]
	// is the index in formatMeta of metadata column j, or -1 for the
	// connector's own metadata.
	formatMeta    []string
	metaFormat    []int
	startup       offsetsSpec
	bounded       offsetsSpec
	discovery     time.Duration // 0: off
	parallelism   int
	consumerOpts  []kgo.Opt
	readCommitted bool
	autoReset     string // properties.auto.offset.reset: earliest, latest or none
	// commitOffsets is properties.commit.offsets.on.checkpoint: commit a
	// completed checkpoint's offsets to properties.group.id.
	commitOffsets bool
	skipped       exec.Counter
	commitsFailed exec.Counter

	// firstStops are a bounded read's stop offsets as resolved at the job's
	// first start, shared by its subtasks and reused by readers of later
	// attempts in this process (a restart before any checkpoint completed):
	// the bound does not move with the restarts.
	stopsMu    sync.Mutex
	firstStops map[TopicPartition]int64

	// Logf receives warnings of the readers (offset commits that failed,
	// partitions a restored bounded read leaves out). Nil writes them to
	// standard error.
	Logf func(format string, args ...any)
}

func (s *Source) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, "[WARN] "+format+"\n", args...)
}

var _ connectors.ScanSource = (*Source)(nil)

func newSource(c *tableConfig) (*Source, error) {
	opts := connectors.Options(c.tc.Options)
	s := &Source{cfg: c}
	var err error
	if s.metaKeys, err = c.resolveMetadata(true); err != nil {
		return nil, err
	}
	for _, k := range s.metaKeys {
		idx := -1
		if _, ok := c.valueMetaKeys[k]; ok {
			idx = len(s.formatMeta)
			s.formatMeta = append(s.formatMeta, strings.TrimPrefix(k, valueMetadataPrefix))
		}
		s.metaFormat = append(s.metaFormat, idx)
	}
	if c.upsert {
		s.startup = offsetsSpec{mode: StartEarliest} // always, to see every key's latest value
	} else if s.startup, err = c.parseOffsetsSpec(OptStartupMode, OptStartupTimestamp, OptStartupSpecificOffsets, startupModes, StartGroupOffsets, "startup"); err != nil {
		return nil, err
	}
	if s.bounded, err = c.parseOffsetsSpec(OptBoundedMode, OptBoundedTimestamp, OptBoundedSpecificOffsets, boundedModes, BoundedUnbounded, "bounded"); err != nil {
		return nil, err
	}
	if s.discovery, err = opts.Duration(OptPartitionDiscovery, defaultDiscoveryInterval); err != nil {
		return nil, err
	}
	if s.bounded.mode != BoundedUnbounded {
		s.discovery = 0 // as Flink: bounded reads do not discover partitions
	}
	if s.parallelism, err = opts.Int(OptScanParallelism, 0); err != nil {
		return nil, err
	}
	if opts.Has(OptScanParallelism) && s.parallelism <= 0 {
		return nil, fmt.Errorf("Invalid value for option '%s'. Expected a positive number, but was: %d", OptScanParallelism, s.parallelism)
	}
	s.autoReset = "none"
	if v, ok := c.props["auto.offset.reset"]; ok {
		s.autoReset = strings.ToLower(strings.TrimSpace(v))
		if s.autoReset != "earliest" && s.autoReset != "latest" && s.autoReset != "none" {
			return nil, fmt.Errorf("auto.offset.reset can not be set to %s. Valid values: [latest,earliest,none]", v)
		}
	}
	if s.commitOffsets, err = parseCommitOffsets(c); err != nil {
		return nil, err
	}
	if (s.startup.mode == StartGroupOffsets || s.bounded.mode == StartGroupOffsets) && c.groupID == "" {
		return nil, errors.New("Property group.id is required when using committed offset for offsets initializer")
	}
	if s.consumerOpts, s.readCommitted, err = c.consumerOpts(); err != nil {
		return nil, err
	}
	// Create the decoders once so that bad format options fail before the job starts.
	if _, _, err := s.decoders(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Source) decoders() (key, value formats.Decoder, err error) {
	c := s.cfg
	if c.keyFormatKey != "" {
		if key, err = connectors.CreateDecoder(c.tc, c.keyFormatKey, c.keySchema); err != nil {
			return nil, nil, err
		}
	}
	if value, err = connectors.CreateDecoderWithMetadata(c.tc, c.valueFormatKey, c.valueSchema, s.formatMeta); err != nil {
		return nil, nil, err
	}
	if _, ok := value.(formats.ChangelogDecoder); !ok && !c.valueMode.IsInsertOnly() {
		return nil, nil, fmt.Errorf("kafka table %s: the value format '%s' produces a changelog but its decoder cannot decode one", c.name, c.tc.Options[c.valueFormatKey])
	}
	return key, value, nil
}

// Bounded implements connectors.ScanSource.
func (s *Source) Bounded() bool { return s.bounded.mode != BoundedUnbounded }

// ChangelogMode implements connectors.ScanSource: upsert-kafka produces an
// upsert stream, kafka what its value format produces (inserts, or a full
// changelog for debezium-json, canal-json and maxwell-json).
func (s *Source) ChangelogMode() types.ChangelogMode {
	if s.cfg.upsert {
		return types.Upsert
	}
	return s.cfg.valueMode
}

// Parallelism implements connectors.ScanSource: 'scan.parallelism' or the
// job's default. Subtasks beyond the number of partitions own no split, as
// in Flink.
func (s *Source) Parallelism(defaultParallelism int) int {
	if s.parallelism > 0 {
		return s.parallelism
	}
	return max(defaultParallelism, 1)
}

// ReadableMetadata implements connectors.ScanSource.
func (s *Source) ReadableMetadata() map[string]types.Type { return s.cfg.readableMetadata() }

// CommitsFailed counts offset commits to the consumer group that failed
// (each is also logged); the checkpoint holds the offsets all the same, so
// only a job started fresh with 'group-offsets' is affected.
func (s *Source) CommitsFailed() *exec.Counter { return &s.commitsFailed }

// parseCommitOffsets reads 'properties.commit.offsets.on.checkpoint' as
// Flink's KafkaSourceBuilder does: on by default when 'properties.group.id'
// is set, off without a group id, and an error when asked for without one.
func parseCommitOffsets(c *tableConfig) (bool, error) {
	v, set := c.props[propCommitOffsets]
	on := true
	if set {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
		case "false":
			on = false
		default:
			return false, fmt.Errorf("Invalid value for option '%s%s'. Expected one of [true, false], but was: %s", propertiesPrefix, propCommitOffsets, v)
		}
	}
	if c.groupID == "" {
		if set && on {
			return false, errors.New("Property group.id is required when offset commit is enabled")
		}
		return false, nil
	}
	return on, nil
}

// SkippedRecords counts the records dropped over all readers of the source:
// those the format skipped under ignore-parse-errors, and records whose key
// or value decodes to no row (a null JSON record).
func (s *Source) SkippedRecords() *exec.Counter { return &s.skipped }

// NewReader implements connectors.ScanSource.
func (s *Source) NewReader(subtask, parallelism int) (exec.SourceReader, error) {
	return s.NewKafkaReader(subtask, parallelism)
}

// NewKafkaReader is NewReader with the concrete type, for callers that use
// Offsets and RestoreOffsets.
func (s *Source) NewKafkaReader(subtask, parallelism int) (*Reader, error) {
	if parallelism <= 0 || subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("kafka table %s: invalid subtask %d of %d", s.cfg.name, subtask, parallelism)
	}
	keyDec, valueDec, err := s.decoders()
	if err != nil {
		return nil, err
	}
	c := s.cfg
	r := &Reader{
		src: s, subtask: subtask, parallelism: parallelism,
		keyDec: keyDec, valueDec: valueDec,
		nphys: len(c.tc.Physical), index: map[TopicPartition]int{},
	}
	r.valueDirect = keyDec == nil && len(c.valueIdx) == r.nphys
	if cd, ok := valueDec.(formats.ChangelogDecoder); ok {
		r.changes = cd
		r.emit = r.appendChange
	}
	if keyDec != nil {
		r.keyRow = make(types.Row, len(c.keyIdx))
	}
	if !r.valueDirect {
		r.valueRow = make(types.Row, len(c.valueIdx))
	}
	return r, nil
}

// split is one partition a reader owns.
type split struct {
	tp       TopicPartition
	topicVal types.Value
	next     int64 // next offset to read
	stop     int64 // offset at which a bounded read of the partition ends; < 0: never
	recs     []*kgo.Record
	pos      int
	done     bool // reached stop
	reported bool // done was reported to the runtime
	// end is the partition's end for this reader's isolation level (the
	// last stable offset under read_committed, else the high watermark)
	// as the latest fetch saw it; -1 before one.
	end int64
}

// Reader reads the partitions one subtask owns; partition i of the ones it
// owns (in the order they were found) is split i. It is used by one
// goroutine, except Offsets which may be called from another.
type Reader struct {
	src                  *Source
	subtask, parallelism int
	keyDec, valueDec     formats.Decoder
	nphys                int
	valueDirect          bool // the value format fills row[:nphys] directly
	keyRow, valueRow     types.Row

	// changes decodes the values of a changelog format; emit (appendChange)
	// appends each of a record's rows to batch.
	changes formats.ChangelogDecoder
	emit    func(types.RowKind, types.Row)
	batch   *types.Batch

	cl            *kgo.Client
	adm           *kadm.Client
	restore       *position // nil: a fresh start
	nextDiscovery time.Time
	rr            int // next split to look at

	mu     sync.Mutex // guards splits' next offsets and the split list for Offsets
	splits []*split
	index  map[TopicPartition]int

	ctx    context.Context // Open's: bounds offset commits
	commit committer
}

// committer commits completed checkpoints' offsets to the consumer group off
// the task's goroutine, one commit at a time; a newer checkpoint's offsets
// replace a commit still waiting to start, as the newest subsume the older.
type committer struct {
	mu      sync.Mutex
	pending kadm.Offsets // newest offsets not yet sent
	id      exec.CheckpointID
	running bool
	last    kadm.Offsets // last offsets committed
	wg      sync.WaitGroup
}

var _ exec.SourceReader = (*Reader)(nil)

// RestoreOffsets makes the reader start the given partitions at the given
// offsets (the next offset to read), as on restore from a checkpoint that
// holds no stop offsets: a bounded read resolves them again, and partitions
// not given start at the earliest offset. It must be called before Open.
func (r *Reader) RestoreOffsets(offsets map[TopicPartition]int64) {
	r.restore = &position{next: offsets}
}

// Offsets returns the next offset to read of every partition the reader
// owns: the source's operator state.
func (r *Reader) Offsets() map[TopicPartition]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[TopicPartition]int64, len(r.splits))
	for _, s := range r.splits {
		out[s.tp] = s.next
	}
	return out
}

// position returns the reader's checkpointed state: the next offsets and,
// for a bounded read, the stop offsets.
func (r *Reader) position() *position {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &position{next: make(map[TopicPartition]int64, len(r.splits))}
	if r.src.Bounded() {
		p.stop = make(map[TopicPartition]int64, len(r.splits))
	}
	for _, s := range r.splits {
		p.next[s.tp] = s.next
		if p.stop != nil {
			p.stop[s.tp] = s.stop
		}
	}
	return p
}

// Partitions returns the partitions the reader owns, split i at index i.
func (r *Reader) Partitions() []TopicPartition {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TopicPartition, len(r.splits))
	for i, s := range r.splits {
		out[i] = s.tp
	}
	return out
}

// Open implements exec.SourceReader: it connects, lists the partitions,
// keeps those the subtask owns and resolves their start and stop offsets.
func (r *Reader) Open(ctx context.Context) error {
	c := r.src.cfg
	cl, err := kgo.NewClient(r.src.consumerOpts...)
	if err != nil {
		return fmt.Errorf("kafka table %s: creating the Kafka client: %w", c.name, err)
	}
	r.cl, r.adm, r.ctx = cl, kadm.NewClient(cl), ctx
	tps, err := r.listPartitions(ctx, true)
	if err != nil {
		return err
	}
	start := r.src.startup
	if r.restore != nil {
		// FLIP-288: the startup mode is for the job's first start. A
		// partition the restored position does not hold appeared after
		// the checkpoint (or after the first start) and nobody read it
		// yet, so all of it is read.
		start = offsetsSpec{mode: StartEarliest}
	}
	if err := r.addSplits(ctx, tps, start); err != nil {
		return err
	}
	if r.src.discovery > 0 {
		r.nextDiscovery = time.Now().Add(r.src.discovery)
	}
	return nil
}

// Close implements exec.SourceReader. It waits for an offset commit in
// flight, so that the offsets of a job's final checkpoint are committed.
func (r *Reader) Close() error {
	r.commit.wg.Wait()
	if r.cl != nil {
		r.cl.Close()
		r.cl = nil
	}
	return nil
}

// NumSplits implements exec.SourceReader.
func (r *Reader) NumSplits() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.splits)
}

// listPartitions returns the partitions of the subscribed topics that this
// subtask owns and does not read yet, sorted. At the start a topic of
// 'topic' that does not exist is an error.
func (r *Reader) listPartitions(ctx context.Context, initial bool) ([]TopicPartition, error) {
	c := r.src.cfg
	mctx, cancel := c.contextWithTimeout(ctx)
	defer cancel()
	md, err := r.adm.Metadata(mctx, c.topics...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("kafka table %s: could not fetch metadata from the Kafka cluster at %s within %s: %w",
			c.name, c.serversText(), c.requestTimeout, err)
	}
	var out []TopicPartition
	add := func(td kadm.TopicDetail) {
		for p := range td.Partitions {
			tp := TopicPartition{td.Topic, p}
			if _, known := r.index[tp]; !known && splitOwner(tp, r.parallelism) == r.subtask {
				out = append(out, tp)
			}
		}
	}
	if c.pattern != nil {
		for name, td := range md.Topics {
			if td.Err == nil && !td.IsInternal && c.pattern.MatchString(name) {
				add(td)
			}
		}
	} else {
		for _, t := range c.topics {
			td, ok := md.Topics[t]
			switch {
			case ok && td.Err == nil:
				add(td)
			case !initial:
				// A topic deleted while reading: keep what we have.
			case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
				return nil, fmt.Errorf("kafka table %s: Topic '%s' does not exist in the Kafka cluster at %s", c.name, t, c.serversText())
			default:
				return nil, fmt.Errorf("kafka table %s: metadata of topic '%s' from the Kafka cluster at %s: %w", c.name, t, c.serversText(), td.Err)
			}
		}
	}
	sortTopicPartitions(out)
	return out, nil
}

// addSplits resolves the offsets of new partitions and starts consuming them.
// Partitions in the restored position keep their checkpointed next offset
// and, for a bounded read, their checkpointed stop offset: the bound is fixed
// once at the job's first start, so a restored job reads what an
// uninterrupted one reads. For the same reason a bounded read restored from
// a position with stop offsets does not take up partitions that position
// does not hold (an uninterrupted bounded read does not discover them).
func (r *Reader) addSplits(ctx context.Context, tps []TopicPartition, start offsetsSpec) error {
	bounded := r.src.bounded.mode != BoundedUnbounded
	rp := r.restore
	var keep, needStart, needStop []TopicPartition
	var ignored []string
	for _, tp := range tps {
		var next, stop bool
		if rp != nil {
			_, next = rp.next[tp]
			_, stop = rp.stop[tp]
		}
		if bounded && rp != nil && rp.stop != nil && !next {
			ignored = append(ignored, tp.String())
			continue
		}
		keep = append(keep, tp)
		if !next {
			needStart = append(needStart, tp)
		}
		if bounded && !stop {
			needStop = append(needStop, tp)
		}
	}
	if len(ignored) > 0 {
		r.src.logf("kafka table %s: partitions %s appeared after the bounded read started; it ends at the offsets fixed at its first start and does not read them",
			r.src.cfg.name, strings.Join(ignored, ", "))
	}
	if len(keep) == 0 {
		return nil
	}
	var starts, stops map[TopicPartition]int64
	var err error
	if len(needStart) > 0 {
		if starts, err = r.resolve(ctx, needStart, start, false); err != nil {
			return err
		}
	}
	if len(needStop) > 0 {
		if stops, err = r.src.stopOffsets(func(tps []TopicPartition) (map[TopicPartition]int64, error) {
			return r.resolve(ctx, tps, r.src.bounded, true)
		}, needStop); err != nil {
			return err
		}
	}
	consume := map[string]map[int32]kgo.Offset{}
	r.mu.Lock()
	for _, tp := range keep {
		s := &split{tp: tp, topicVal: types.String(tp.Topic), next: starts[tp], stop: -1, end: -1}
		if o, ok := rp.nextOf(tp); ok {
			s.next = o
		}
		if bounded {
			s.stop = stops[tp]
			if o, ok := rp.stopOf(tp); ok {
				s.stop = o
			}
			s.done = s.next >= s.stop
		}
		r.index[tp] = len(r.splits)
		r.splits = append(r.splits, s)
		if !s.done {
			if consume[tp.Topic] == nil {
				consume[tp.Topic] = map[int32]kgo.Offset{}
			}
			consume[tp.Topic][tp.Partition] = kgo.NewOffset().At(s.next)
		}
	}
	r.mu.Unlock()
	if len(consume) > 0 {
		r.cl.AddConsumePartitions(consume)
	}
	return nil
}

// stopOffsets returns the stop offsets of tps: those resolved before by any
// reader of the source, the others resolved now and remembered.
func (s *Source) stopOffsets(resolve func([]TopicPartition) (map[TopicPartition]int64, error), tps []TopicPartition) (map[TopicPartition]int64, error) {
	s.stopsMu.Lock()
	defer s.stopsMu.Unlock()
	out := make(map[TopicPartition]int64, len(tps))
	var missing []TopicPartition
	for _, tp := range tps {
		if o, ok := s.firstStops[tp]; ok {
			out[tp] = o
		} else {
			missing = append(missing, tp)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	resolved, err := resolve(missing)
	if err != nil {
		return nil, err
	}
	if s.firstStops == nil {
		s.firstStops = map[TopicPartition]int64{}
	}
	for tp, o := range resolved {
		out[tp] = o
		s.firstStops[tp] = o
	}
	return out, nil
}

// resolve turns a startup or bounded spec into an offset per partition.
func (r *Reader) resolve(ctx context.Context, tps []TopicPartition, spec offsetsSpec, stop bool) (map[TopicPartition]int64, error) {
	c := r.src.cfg
	actx, cancel := c.contextWithTimeout(ctx)
	defer cancel()
	topicSet := map[string]bool{}
	var topics []string
	for _, tp := range tps {
		if !topicSet[tp.Topic] {
			topicSet[tp.Topic] = true
			topics = append(topics, tp.Topic)
		}
	}
	wrap := func(what string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kafka table %s: listing %s offsets at the Kafka cluster at %s: %w", c.name, what, c.serversText(), err)
	}
	listed := func(what string, lo kadm.ListedOffsets, err error) (map[TopicPartition]int64, error) {
		if err != nil {
			return nil, wrap(what, err)
		}
		out := make(map[TopicPartition]int64, len(tps))
		for _, tp := range tps {
			o, ok := lo.Lookup(tp.Topic, tp.Partition)
			if !ok {
				return nil, wrap(what, fmt.Errorf("no offset for partition %s", tp))
			}
			if o.Err != nil {
				return nil, wrap(what, fmt.Errorf("partition %s: %w", tp, o.Err))
			}
			out[tp] = o.Offset
		}
		return out, nil
	}
	earliest := func() (map[TopicPartition]int64, error) {
		lo, err := r.adm.ListStartOffsets(actx, topics...)
		return listed("earliest", lo, err)
	}
	latest := func() (map[TopicPartition]int64, error) {
		var lo kadm.ListedOffsets
		var err error
		if r.src.readCommitted {
			lo, err = r.adm.ListCommittedOffsets(actx, topics...) // the last stable offsets
		} else {
			lo, err = r.adm.ListEndOffsets(actx, topics...)
		}
		return listed("latest", lo, err)
	}
	// committed returns the group's offsets of the partitions that have one.
	committed := func() (map[TopicPartition]int64, error) {
		out := map[TopicPartition]int64{}
		if c.groupID == "" {
			return out, nil
		}
		resp, err := r.adm.FetchOffsetsForTopics(actx, c.groupID, topics...)
		if errors.Is(err, kerr.GroupIDNotFound) {
			return out, nil // a group that never committed
		}
		if err != nil {
			return nil, wrap("committed", err)
		}
		for _, tp := range tps {
			if o, ok := resp.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil && o.At >= 0 {
				out[tp] = o.At
			}
		}
		return out, nil
	}
	// fill completes offsets of partitions without one with fallback.
	fill := func(out map[TopicPartition]int64, fallback func() (map[TopicPartition]int64, error)) (map[TopicPartition]int64, error) {
		if len(out) == len(tps) {
			return out, nil
		}
		fb, err := fallback()
		if err != nil {
			return nil, err
		}
		for _, tp := range tps {
			if _, ok := out[tp]; !ok {
				out[tp] = fb[tp]
			}
		}
		return out, nil
	}

	switch spec.mode {
	case StartEarliest:
		return earliest()
	case StartLatest:
		return latest()
	case StartTimestamp:
		lo, err := r.adm.ListOffsetsAfterMilli(actx, spec.timestamp, topics...)
		return listed("timestamp", lo, err)
	case StartSpecificOffsets:
		out := map[TopicPartition]int64{}
		for _, tp := range tps {
			if o, ok := spec.specific[tp.Partition]; ok && tp.Topic == c.topics[0] {
				out[tp] = o
			}
		}
		if len(out) == len(tps) {
			return out, nil
		}
		// As Flink: partitions not listed use the group's committed
		// offset, else the earliest.
		com, err := committed()
		if err != nil {
			return nil, err
		}
		for tp, o := range com {
			if _, ok := out[tp]; !ok {
				out[tp] = o
			}
		}
		return fill(out, earliest)
	case StartGroupOffsets:
		out, err := committed()
		if err != nil {
			return nil, err
		}
		reset := r.src.autoReset
		if stop {
			reset = "none"
		}
		switch reset {
		case "earliest":
			return fill(out, earliest)
		case "latest":
			return fill(out, latest)
		}
		for _, tp := range tps {
			if _, ok := out[tp]; !ok {
				return nil, fmt.Errorf("kafka table %s: partition %s has no committed offset for group '%s' and 'properties.auto.offset.reset' is 'none'; set it to 'earliest' or 'latest', or choose another '%s'",
					c.name, tp, c.groupID, map[bool]string{false: OptStartupMode, true: OptBoundedMode}[stop])
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("kafka table %s: unknown offsets mode '%s'", c.name, spec.mode)
}

// maybeDiscover looks for new partitions when the discovery interval passed.
func (r *Reader) maybeDiscover(ctx context.Context) error {
	if r.src.discovery <= 0 || time.Now().Before(r.nextDiscovery) {
		return nil
	}
	tps, err := r.listPartitions(ctx, false)
	if err == nil {
		err = r.addSplits(ctx, tps, offsetsSpec{mode: StartEarliest})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // interrupted by the runtime's deadline: try again on the next Read
		}
		return err
	}
	r.nextDiscovery = time.Now().Add(r.src.discovery)
	return nil
}

// Read implements exec.SourceReader. Fetched records are buffered per
// partition and handed out one partition per call, round robin.
func (r *Reader) Read(ctx context.Context, b *types.Batch) (exec.ReadResult, error) {
	for {
		if err := r.maybeDiscover(ctx); err != nil {
			return exec.ReadResult{Split: -1}, err
		}
		if res, ok, err := r.drain(b); ok || err != nil {
			return res, err
		}
		if r.src.Bounded() && r.allDone() {
			return exec.ReadResult{Split: -1, End: true}, nil
		}
		if ctx.Err() != nil {
			return exec.ReadResult{Split: -1}, nil
		}
		if err := r.poll(ctx); err != nil {
			return exec.ReadResult{Split: -1}, err
		}
	}
}

// RecordsLagMax is the largest number of records any of the reader's
// partitions has beyond what it read, as of the latest fetch (Kafka's
// consumer metric records-lag-max); -1 before a fetch said.
func (r *Reader) RecordsLagMax() int64 {
	lag := int64(-1)
	for _, s := range r.splits {
		if s.end >= 0 && !s.done {
			lag = max(lag, s.end-s.next)
		}
	}
	return lag
}

// RemainingRows implements exec.RemainingReporter for the progress
// `flinksql -f` shows: the offsets a bounded read has still to pass before
// its stop offsets, -1 for an unbounded read or before Open resolved them.
// Offsets over-count records (transaction markers, aborted or compacted
// records take offsets too), so the figure is an upper bound that reaches 0
// when every partition is done.
func (r *Reader) RemainingRows() int64 {
	if r.cl == nil {
		return -1
	}
	left := int64(0)
	for _, s := range r.splits {
		switch {
		case s.done:
		case s.stop < 0:
			return -1
		default:
			left += max(s.stop-s.next, 0)
		}
	}
	return left
}

func (r *Reader) allDone() bool {
	for _, s := range r.splits {
		if !s.reported {
			return false
		}
	}
	return true
}

// poll waits for fetched records and buffers them per partition.
func (r *Reader) poll(ctx context.Context) error {
	c := r.src.cfg
	fetches := r.cl.PollFetches(ctx)
	if fetches.IsClientClosed() {
		return fmt.Errorf("kafka table %s: the Kafka client was closed", c.name)
	}
	for _, fe := range fetches.Errors() {
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
			continue
		}
		return fmt.Errorf("kafka table %s: fetching topic '%s' partition %d from the Kafka cluster at %s: %w",
			c.name, fe.Topic, fe.Partition, c.serversText(), fe.Err)
	}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		i, ok := r.index[TopicPartition{p.Topic, p.Partition}]
		if !ok {
			return
		}
		s := r.splits[i]
		if end := p.LastStableOffset; end >= 0 {
			s.end = end
		} else if p.HighWatermark >= 0 {
			s.end = p.HighWatermark
		}
		if len(p.Records) == 0 || s.done {
			return
		}
		if s.pos >= len(s.recs) {
			s.recs, s.pos = p.Records, 0
		} else {
			s.recs = append(s.recs, p.Records...)
		}
	})
	return nil
}

// drain hands out buffered rows of one split; ok is false when no split had
// anything to say.
func (r *Reader) drain(b *types.Batch) (exec.ReadResult, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.splits)
	for _, s := range r.splits {
		if s.done && !s.reported {
			s.reported = true
			return exec.ReadResult{Split: r.index[s.tp], SplitDone: true}, true, nil
		}
	}
	limit := b.Cap() - b.Len()
	if limit <= 0 {
		limit = 1
	}
	for k := 0; k < n; k++ {
		i := (r.rr + k) % n
		s := r.splits[i]
		if s.done || s.pos >= len(s.recs) {
			continue
		}
		start := b.Len()
		err := r.decodeSplit(s, b, limit)
		if s.pos >= len(s.recs) {
			clear(s.recs) // let the records go
			s.recs, s.pos = s.recs[:0], 0
		}
		if err != nil {
			return exec.ReadResult{Split: i}, true, err
		}
		if s.done {
			s.reported = true
			r.finishSplit(s)
		}
		if b.Len() > start || s.done {
			r.rr = (i + 1) % n
			return exec.ReadResult{Split: i, SplitDone: s.done}, true, nil
		}
	}
	return exec.ReadResult{Split: -1}, false, nil
}

// finishSplit stops fetching a partition that reached its stop offset.
func (r *Reader) finishSplit(s *split) {
	clear(s.recs)
	s.recs, s.pos = nil, 0
	r.cl.RemoveConsumePartitions(map[string][]int32{s.tp.Topic: {s.tp.Partition}})
}

// decodeSplit appends up to limit rows of s's buffered records to b.
func (r *Reader) decodeSplit(s *split, b *types.Batch, limit int) error {
	rows := 0
	for s.pos < len(s.recs) && rows < limit {
		rec := s.recs[s.pos]
		if s.stop >= 0 && rec.Offset >= s.stop {
			s.done = true
			return nil
		}
		s.pos++
		if rec.Offset < s.next {
			continue
		}
		s.next = rec.Offset + 1
		if rec.Attrs.IsControl() {
			continue // transaction markers only move the position
		}
		before := b.Len()
		if _, err := r.decodeRecord(s, rec, b); err != nil {
			return err
		}
		rows += b.Len() - before // a change event may be two rows (an update)
	}
	if s.stop >= 0 && s.next >= s.stop {
		s.done = true
	}
	return nil
}

// decodeRecord appends the row of one record; added is false when the
// record yields no row.
func (r *Reader) decodeRecord(s *split, rec *kgo.Record, b *types.Batch) (bool, error) {
	if r.changes != nil {
		return r.decodeChanges(s, rec, b)
	}
	c := r.src.cfg
	tombstone := c.upsert && rec.Value == nil
	kind := types.Insert // the value format's kind, as Flink's deserializer keeps it
	if tombstone {
		kind = types.Delete
	}
	row := b.Append(kind)
	drop := func(what string, data []byte, err error) (bool, error) {
		b.Truncate(b.Len() - 1)
		if errors.Is(err, formats.ErrSkipRecord) {
			r.src.skipped.Add(1)
			return false, nil
		}
		return false, fmt.Errorf("kafka table %s: failed to deserialize the %s of the record at topic '%s', partition %d, offset %d: %w\nRecord %s: %s",
			c.name, what, rec.Topic, rec.Partition, rec.Offset, err, what, recordPrefix(data))
	}
	if r.keyDec != nil {
		clear(r.keyRow)
		if err := r.keyDec.Decode(rec.Key, r.keyRow); err != nil {
			return drop("key", rec.Key, err)
		}
		for i, pos := range c.keyIdx {
			row[pos] = r.keyRow[i]
		}
	}
	if !tombstone {
		if r.valueDirect {
			if err := r.valueDec.Decode(rec.Value, row[:r.nphys]); err != nil {
				return drop("value", rec.Value, err)
			}
		} else {
			clear(r.valueRow)
			if err := r.valueDec.Decode(rec.Value, r.valueRow); err != nil {
				return drop("value", rec.Value, err)
			}
			for i, pos := range c.valueIdx {
				row[pos] = r.valueRow[i]
			}
		}
	}
	for j, key := range r.src.metaKeys {
		row[r.nphys+j] = metadataValue(key, s, rec)
	}
	return true, nil
}

// decodeChanges appends the rows of one change event (none for a
// tombstone, two for an update) to b: the value format's columns and
// metadata, then the key's columns and the connector's metadata in each.
func (r *Reader) decodeChanges(s *split, rec *kgo.Record, b *types.Batch) (bool, error) {
	c := r.src.cfg
	start := b.Len()
	fail := func(what string, data []byte, err error) (bool, error) {
		b.Truncate(start)
		if errors.Is(err, formats.ErrSkipRecord) {
			r.src.skipped.Add(1)
			return false, nil
		}
		return false, fmt.Errorf("kafka table %s: failed to deserialize the %s of the record at topic '%s', partition %d, offset %d: %w",
			c.name, what, rec.Topic, rec.Partition, rec.Offset, err)
	}
	r.batch = b
	err := r.changes.DecodeChangelog(rec.Value, r.emit)
	r.batch = nil
	if err != nil {
		return fail("value", rec.Value, err)
	}
	if b.Len() == start {
		return false, nil // a tombstone, or an event for another table
	}
	if r.keyDec != nil {
		clear(r.keyRow)
		if err := r.keyDec.Decode(rec.Key, r.keyRow); err != nil {
			return fail("key", rec.Key, err)
		}
	}
	for i := start; i < b.Len(); i++ {
		row := b.Rows[i]
		if r.keyDec != nil {
			for k, pos := range c.keyIdx {
				row[pos] = r.keyRow[k]
			}
		}
		for j, key := range r.src.metaKeys {
			if r.src.metaFormat[j] < 0 {
				row[r.nphys+j] = metadataValue(key, s, rec)
			}
		}
	}
	return true, nil
}

// appendChange is the emit function of the changelog decoder: row holds
// the value columns then the format's metadata.
func (r *Reader) appendChange(kind types.RowKind, row types.Row) {
	c := r.src.cfg
	out := r.batch.Append(kind)
	for i, pos := range c.valueIdx {
		out[pos] = row[i]
	}
	nv := len(c.valueIdx)
	for j, fi := range r.src.metaFormat {
		if fi >= 0 {
			out[r.nphys+j] = row[nv+fi]
		}
	}
}

func metadataValue(key string, s *split, rec *kgo.Record) types.Value {
	switch key {
	case MetaTopic:
		return s.topicVal
	case MetaPartition:
		return types.Int(int64(rec.Partition))
	case MetaOffset:
		return types.Int(rec.Offset)
	case MetaTimestamp:
		return types.Timestamp(rec.Timestamp.UnixMilli(), 0)
	case MetaTimestampType:
		switch rec.Attrs.TimestampType() {
		case 0:
			return types.String("CreateTime")
		case 1:
			return types.String("LogAppendTime")
		}
		return types.String("NoTimestampType")
	case MetaLeaderEpoch:
		if rec.LeaderEpoch < 0 {
			return types.Value{}
		}
		return types.Int(int64(rec.LeaderEpoch))
	case MetaHeaders:
		keys := make([]types.Value, len(rec.Headers))
		values := make([]types.Value, len(rec.Headers))
		for i, h := range rec.Headers {
			keys[i] = types.String(h.Key)
			if h.Value != nil {
				values[i] = types.Bytes(h.Value)
			}
		}
		return types.MapOf(keys, values)
	}
	return types.Value{}
}
