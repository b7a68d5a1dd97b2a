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

// dataFileMeta is an iceberg.DataFile of an unpartitioned table.
type dataFileMeta struct {
	Path         string         `json:"path"`
	Records      int64          `json:"records"`
	Size         int64          `json:"size"`
	ColumnSizes  map[int]int64  `json:"columnSizes,omitempty"`
	ValueCounts  map[int]int64  `json:"valueCounts,omitempty"`
	NullCounts   map[int]int64  `json:"nullCounts,omitempty"`
	NaNCounts    map[int]int64  `json:"nanCounts,omitempty"`
	LowerBounds  map[int][]byte `json:"lower,omitempty"`
	UpperBounds  map[int][]byte `json:"upper,omitempty"`
	SplitOffsets []int64        `json:"splits,omitempty"`
	SortOrderID  *int           `json:"sortOrder,omitempty"`
}

const committableVersion = 1

func encodeCommittable(jobID string, checkpoint int64, files []iceberg.DataFile) (exec.Committable, error) {
	c := committable{Version: committableVersion, JobID: jobID, Checkpoint: checkpoint, Files: make([]dataFileMeta, len(files))}
	for i, f := range files {
		if len(f.Partition()) > 0 {
			return nil, fmt.Errorf("data file %s has partition values; partitioned tables are not supported", f.FilePath())
		}
		c.Files[i] = dataFileMeta{
			Path: f.FilePath(), Records: f.Count(), Size: f.FileSizeBytes(),
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

// dataFiles rebuilds the data files for a manifest of spec.
func (c *committable) dataFiles(spec iceberg.PartitionSpec) ([]iceberg.DataFile, error) {
	if !spec.IsUnpartitioned() {
		return nil, fmt.Errorf("the table is partitioned (%s); partitioned tables are not supported", spec.String())
	}
	out := make([]iceberg.DataFile, len(c.Files))
	for i, f := range c.Files {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, f.Path, iceberg.ParquetFile, nil, nil, nil, f.Records, f.Size)
		if err != nil {
			return nil, err
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
