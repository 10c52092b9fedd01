// The checkpoints of a training run in one directory: <dir>/checkpoint-<step>.ckpt (the format of
// checkpoint_file.h; checkpoint-<step>.pb files of earlier releases are still found and read).
// The latest is the one with the highest step. Each is written durably, and once it is, all but
// the newest `keep` are deleted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_file.h"

namespace autodist::checkpoint {

// <dir>/checkpoint-<step>.ckpt.
std::string CheckpointPath(const std::string& dir, int64_t step);

// Creates `dir` (and its parents) where it does not exist; throws InvalidArgument naming it when
// it cannot be created. Before parameter servers write their shards into it, and by
// WriteCheckpoint.
void CreateCheckpointDirectory(const std::string& dir);

// The file parameter server `index` writes its shards of checkpoint `checkpoint_path` to:
// "<checkpoint_path>.ps-<index>". It belongs to that checkpoint: it is deleted with it.
std::string ShardFilePath(const std::string& checkpoint_path, int index);

// Writes `contents` to <dir>/checkpoint-<step>.ckpt (creating `dir`), then deletes all but the
// newest `keep` checkpoints (keep 0: none) with their shard files, and what earlier writes
// interrupted by a crash left behind (temporaries; shard files of a checkpoint never written).
// Returns the path. Throws InvalidArgument naming the path (and the bytes needed when the disk is
// full); the checkpoints already there are then untouched.
std::string WriteCheckpoint(const std::string& dir, const CheckpointContents& contents, int keep);

// Deletes every checkpoint in `dir` with its shard files, and what unfinished writes left behind;
// other files stay. Returns how many checkpoints it deleted (0 when there is no `dir`). For a run
// that starts over (`autodist run --fresh`): the old run's checkpoints, at higher steps than the
// new run's, would otherwise be taken for the newest and crowd the new ones out of `keep`.
int RemoveCheckpoints(const std::string& dir);

// The checkpoints in `dir`, newest (highest step) first; empty when there is none or no `dir`.
std::vector<std::string> ListCheckpoints(const std::string& dir);

// The path of the latest checkpoint in `dir`, if any.
std::optional<std::string> LatestCheckpoint(const std::string& dir);

}  // namespace autodist::checkpoint
