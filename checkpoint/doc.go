// Package checkpoint owns durable checkpoint storage for flinksql jobs
// (DESIGN.md §4): the Storage abstraction over file:// directories and
// s3://bucket/prefix locations, the layout <dir>/<job>/shared/ (state files
// uploaded once and reused by reference) and <dir>/<job>/chk-<n>/ (private
// files and _metadata), the versioned _metadata format, the shared-state
// registry that reference-counts shared files across retained checkpoints,
// retention (state.checkpoints.num-retained and
// execution.checkpointing.externalized-checkpoint-retention), and the
// exec.CheckpointStore implementation that connects the runtime's operator
// instances to package state and to that storage.
//
// A checkpoint exists exactly when its _metadata object exists: it is written
// last, atomically, after every file it references is durable. When a
// checkpoint is subsumed its _metadata is deleted first, so a crash part-way
// through a deletion never leaves a checkpoint that points at missing files.
// A _metadata write that reports an error is undone (the storage may have
// stored it), and recovery (Manager.LatestRestorable) skips checkpoints whose
// _metadata is corrupt or whose files are missing for the previous one.
//
// One run at a time owns a job's directory: a lock file on local storage
// (held by the session), a renewed lease object written with conditional
// PUTs on S3 (Lease), and a manager whose run lost its lease writes and
// deletes nothing (WithGuard).
package checkpoint
