package iceberg

import (
	"encoding/json"
	"fmt"

	"github.com/flinksql/flinksql/exec"

	iceberg "github.com/apache/iceberg-go"
)

// committable is what one checkpoint hands to the committer: the data
// files written before its barrier, with the metadata a manifest entry
// needs, under the writer's job id and the checkpoint id. It is kept in
// the checkpoint until committed, so a restore can commit it again.
type committable struct {
	Version    int            `json:"v"`
	JobID      string         `json:"job"`
	Checkpoint int64          `json:"checkpoint"`
	Files      []dataFileMeta `json:"files"`
}

// dataFileMeta is an iceberg.DataFile, with its partition values under
// their partition field ids.
type dataFileMeta struct {
	Path         string               `json:"path"`
	Content      int                  `json:"content,omitempty"` // iceberg.EntryContent: 0 data, 2 equality deletes
	EqualityIDs  []int                `json:"equalityIds,omitempty"`
	Partition    map[int]partitionVal `json:"partition,omitempty"`
	Records      int64                `json:"records"`
	Size         int64                `json:"size"`
	ColumnSizes  map[int]int64        `json:"columnSizes,omitempty"`
	ValueCounts  map[int]int64        `json:"valueCounts,omitempty"`
	NullCounts   map[int]int64        `json:"nullCounts,omitempty"`
	NaNCounts    map[int]int64        `json:"nanCounts,omitempty"`
	LowerBounds  map[int][]byte       `json:"lower,omitempty"`
	UpperBounds  map[int][]byte       `json:"upper,omitempty"`
	SplitOffsets []int64              `json:"splits,omitempty"`
	SortOrderID  *int                 `json:"sortOrder,omitempty"`
}

const committableVersion = 1

func encodeCommittable(jobID string, checkpoint int64, files []iceberg.DataFile) (exec.Committable, error) {
	c := committable{Version: committableVersion, JobID: jobID, Checkpoint: checkpoint, Files: make([]dataFileMeta, len(files))}
	for i, f := range files {
		part, err := encodePartition(f.Partition())
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.FilePath(), err)
		}
		c.Files[i] = dataFileMeta{
			Path: f.FilePath(), Partition: part, Content: int(f.ContentType()), EqualityIDs: f.EqualityFieldIDs(), Records: f.Count(), Size: f.FileSizeBytes(),
			ColumnSizes: f.ColumnSizes(), ValueCounts: f.ValueCounts(), NullCounts: f.NullValueCounts(),
			NaNCounts: f.NaNValueCounts(), LowerBounds: f.LowerBoundValues(), UpperBounds: f.UpperBoundValues(),
			SplitOffsets: f.SplitOffsets(), SortOrderID: f.SortOrderID(),
		}
	}
	return json.Marshal(c)
}

func decodeCommittable(b exec.Committable) (*committable, error) {
	var c committable
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("bad committable in the checkpoint: %w", err)
	}
	if c.Version != committableVersion {
		return nil, fmt.Errorf("committable of version %d in the checkpoint, expected %d", c.Version, committableVersion)
	}
	return &c, nil
}

// dataFiles rebuilds the data files for a manifest of spec over schema.
func (c *committable) dataFiles(spec iceberg.PartitionSpec, schema *iceberg.Schema) ([]iceberg.DataFile, error) {
	logical := map[int]string{}
	for _, f := range spec.Fields() {
		src, ok := schema.FindFieldByID(f.SourceID())
		if !ok {
			return nil, fmt.Errorf("partition field %s: source column %d is not in the table's schema", f.Name, f.SourceID())
		}
		switch f.Transform.ResultType(src.Type).(type) {
		case iceberg.DateType:
			logical[f.FieldID] = "date"
		case iceberg.TimeType:
			logical[f.FieldID] = "time-micros"
		case iceberg.TimestampType, iceberg.TimestampTzType:
			logical[f.FieldID] = "timestamp-micros"
		}
	}
	out := make([]iceberg.DataFile, len(c.Files))
	for i, f := range c.Files {
		part, err := decodePartition(f.Partition)
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		if len(part) != spec.NumFields() {
			return nil, fmt.Errorf("data file %s has %d partition values, the table's partition spec %s has %d fields", f.Path, len(part), spec.String(), spec.NumFields())
		}
		content := iceberg.ManifestEntryContent(f.Content)
		b, err := iceberg.NewDataFileBuilder(spec, content, f.Path, iceberg.ParquetFile, part, logical, nil, f.Records, f.Size)
		if err != nil {
			return nil, err
		}
		if content == iceberg.EntryContentEqDeletes {
			b.EqualityFieldIDs(f.EqualityIDs)
		}
		b.ColumnSizes(f.ColumnSizes).ValueCounts(f.ValueCounts).NullValueCounts(f.NullCounts).
			NaNValueCounts(f.NaNCounts).LowerBoundValues(f.LowerBounds).UpperBoundValues(f.UpperBounds)
		if len(f.SplitOffsets) > 0 {
			b.SplitOffsets(f.SplitOffsets)
		}
		if f.SortOrderID != nil {
			b.SortOrderID(*f.SortOrderID)
		}
		out[i] = b.Build()
	}
	return out, nil
}

// partitionVal is one partition value with its Go type, which JSON alone
// would lose (an int32 and an iceberg.Date are both numbers).
type partitionVal struct {
	T string          `json:"t"`
	V json.RawMessage `json:"v,omitempty"`
}

func encodePartition(p map[int]any) (map[int]partitionVal, error) {
	if len(p) == 0 {
		return nil, nil
	}
	out := make(map[int]partitionVal, len(p))
	for id, v := range p {
		var t string
		switch v.(type) {
		case nil:
			out[id] = partitionVal{T: "null"}
			continue
		case bool:
			t = "bool"
		case int32:
			t = "int32"
		case int64:
			t = "int64"
		case float32:
			t = "float32"
		case float64:
			t = "float64"
		case string:
			t = "string"
		case []byte:
			t = "bytes"
		case iceberg.Date:
			t = "date"
		case iceberg.Time:
			t = "time"
		case iceberg.Timestamp:
			t = "timestamp"
		default:
			return nil, fmt.Errorf("partition value of Go type %T is not supported", v)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[id] = partitionVal{T: t, V: raw}
	}
	return out, nil
}

func decodePartition(p map[int]partitionVal) (map[int]any, error) {
	out := make(map[int]any, len(p))
	for id, pv := range p {
		var v any
		var err error
		switch pv.T {
		case "null":
		case "bool":
			v, err = unmarshalAs[bool](pv.V)
		case "int32":
			v, err = unmarshalAs[int32](pv.V)
		case "int64":
			v, err = unmarshalAs[int64](pv.V)
		case "float32":
			v, err = unmarshalAs[float32](pv.V)
		case "float64":
			v, err = unmarshalAs[float64](pv.V)
		case "string":
			v, err = unmarshalAs[string](pv.V)
		case "bytes":
			v, err = unmarshalAs[[]byte](pv.V)
		case "date":
			v, err = unmarshalAs[iceberg.Date](pv.V)
		case "time":
			v, err = unmarshalAs[iceberg.Time](pv.V)
		case "timestamp":
			v, err = unmarshalAs[iceberg.Timestamp](pv.V)
		default:
			return nil, fmt.Errorf("partition field %d: unknown value type %q in the committable", id, pv.T)
		}
		if err != nil {
			return nil, fmt.Errorf("partition field %d: %w", id, err)
		}
		out[id] = v
	}
	return out, nil
}

func unmarshalAs[T any](raw json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}
