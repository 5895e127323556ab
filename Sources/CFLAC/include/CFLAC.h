/* One FLAC frame encoded or decoded in memory with Debian's libFLAC (stream encoder and decoder on memory callbacks):
 * what the speaker protocol's FLAC audio datagrams carry (docs/speaker-protocol.md §7.2). No I/O, no state between
 * calls: each call is one frame, independently decodable. */
#ifndef TUNEUP_CFLAC_H
#define TUNEUP_CFLAC_H

#include <stddef.h>
#include <stdint.h>

/* Results below 0. */
enum {
    TUNEUP_FLAC_ERROR_ALLOCATION = -1,   /* libFLAC could not allocate or initialise its encoder or decoder */
    TUNEUP_FLAC_ERROR_ENCODER = -2,      /* the encoder refused the parameters or the samples */
    TUNEUP_FLAC_ERROR_TOO_LARGE = -3,    /* the frame does not fit the output (or more than one frame came out) */
    TUNEUP_FLAC_ERROR_NO_FRAME = -4,     /* the bytes hold no whole FLAC frame */
    TUNEUP_FLAC_ERROR_CORRUPT = -5,      /* lost sync, a bad header or a CRC mismatch */
    TUNEUP_FLAC_ERROR_FORMAT = -6,       /* the frame's channels, sample size or block size differ from those expected */
    TUNEUP_FLAC_ERROR_EXTRA = -7,        /* more than one frame, or bytes after the frame */
};

/* Encodes `frames` frames of interleaved `samples` (channels × frames values, `bits` significant bits each, 16 or
 * 24) at `rate` Hz as one FLAC frame (compression `level`, 0...8) into `out`. Returns the frame's size in bytes, or
 * an error above. */
long tuneup_flac_encode_frame(const int32_t *samples, unsigned frames, unsigned channels, unsigned bits, unsigned rate,
                              unsigned level, uint8_t *out, size_t capacity);

/* Decodes the one FLAC frame `bytes` holds, which must have `frames` frames of `channels` channels of `bits` bits
 * (16 or 24), into `out` as interleaved little-endian PCM (room for frames × channels × bits / 8 bytes). Returns
 * `frames`, or an error above. Each thread keeps
 * one libFLAC decoder, reset before every frame (its set-up once per thread, not per frame); nothing of one frame
 * reaches the next. */
long tuneup_flac_decode_frame(const uint8_t *bytes, size_t count, unsigned frames, unsigned channels, unsigned bits,
                              uint8_t *out);

/* A stream's encoder kept from one packet to the next: libFLAC's stream encoder initialised once (its set-up reads the
 * CPU's features with CPUID, which costs some 75 µs in a virtual machine: once per stream, not per packet). Frames
 * stay independently decodable (FLAC frames carry no state); libFLAC emits a block once it holds one sample more
 * than the block, so each packet's frames go in with the next packet's first frame (`tuneup_flac_stream_encode`). */
typedef struct tuneup_flac_stream tuneup_flac_stream;

/* NULL when libFLAC cannot allocate or refuses the parameters. `frames` is the block size (the packet's). */
tuneup_flac_stream *tuneup_flac_stream_new(unsigned frames, unsigned channels, unsigned bits, unsigned rate, unsigned level);

/* Feeds `count` frames of interleaved samples, then `next` (0 or 1 frame: the next packet's first frame, already
 * counted as fed by the next call, which then starts after it); with `next_count` 0 the stream is finished (the
 * last block, however short). Writes the one FLAC frame that comes out to `out`; returns its size, or an error. */
long tuneup_flac_stream_encode(tuneup_flac_stream *stream, const int32_t *samples, unsigned count, const int32_t *next,
                               unsigned next_count, uint8_t *out, size_t capacity);

void tuneup_flac_stream_delete(tuneup_flac_stream *stream);

#endif
