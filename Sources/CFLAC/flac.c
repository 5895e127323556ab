/* One FLAC frame in memory through libFLAC's stream encoder and decoder (CFLAC.h). */
#include "CFLAC.h"

#include <FLAC/stream_decoder.h>
#include <FLAC/stream_encoder.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct encode_state {
    uint8_t *out;
    size_t capacity;
    size_t size;
    int frames;
    int overflow;
};

static FLAC__StreamEncoderWriteStatus encode_write(const FLAC__StreamEncoder *encoder, const FLAC__byte buffer[],
                                                   size_t bytes, uint32_t samples, uint32_t current_frame, void *client) {
    (void)encoder; (void)current_frame;
    struct encode_state *s = client;
    if (samples == 0) return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;   /* "fLaC" and STREAMINFO: not sent */
    s->frames += 1;
    if (s->frames > 1 || bytes > s->capacity - s->size) {
        s->overflow = 1;
        return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
    }
    memcpy(s->out + s->size, buffer, bytes);
    s->size += bytes;
    return FLAC__STREAM_ENCODER_WRITE_STATUS_OK;
}

long tuneup_flac_encode_frame(const int32_t *samples, unsigned frames, unsigned channels, unsigned bits, unsigned rate,
                              unsigned level, uint8_t *out, size_t capacity) {
    if (frames == 0 || frames > FLAC__MAX_BLOCK_SIZE) return TUNEUP_FLAC_ERROR_ENCODER;
    FLAC__StreamEncoder *encoder = FLAC__stream_encoder_new();
    if (encoder == NULL) return TUNEUP_FLAC_ERROR_ALLOCATION;
    struct encode_state s = {.out = out, .capacity = capacity};
    /* The block size is set after the level (a level sets one too). Blocks under 16 frames are not allowed as the
     * stream's block size, but the last block of a stream may be shorter: a packet of fewer frames is one. Not the
     * streamable subset: libFLAC holds that to the standard block sizes, and a datagram's size is not one. */
    FLAC__bool ok = FLAC__stream_encoder_set_channels(encoder, channels)
        && FLAC__stream_encoder_set_bits_per_sample(encoder, bits)
        && FLAC__stream_encoder_set_sample_rate(encoder, rate)
        && FLAC__stream_encoder_set_compression_level(encoder, level)
        && FLAC__stream_encoder_set_blocksize(encoder, frames < 16 ? 16 : frames)
        && FLAC__stream_encoder_set_streamable_subset(encoder, false)
        && FLAC__stream_encoder_set_verify(encoder, false);
    long result = TUNEUP_FLAC_ERROR_ENCODER;
    if (ok && FLAC__stream_encoder_init_stream(encoder, encode_write, NULL, NULL, NULL, &s) == FLAC__STREAM_ENCODER_INIT_STATUS_OK) {
        ok = FLAC__stream_encoder_process_interleaved(encoder, samples, frames);
        ok = FLAC__stream_encoder_finish(encoder) && ok;
        if (!ok) result = TUNEUP_FLAC_ERROR_ENCODER;
        else if (s.overflow) result = TUNEUP_FLAC_ERROR_TOO_LARGE;
        else if (s.frames != 1) result = TUNEUP_FLAC_ERROR_ENCODER;
        else result = (long)s.size;
    }
    FLAC__stream_encoder_delete(encoder);
    return result;
}

struct decode_state {
    const uint8_t *bytes;
    size_t count;
    size_t position;
    unsigned frames;
    unsigned channels;
    unsigned bits;
    uint8_t *out;  /* interleaved little-endian PCM, bits / 8 bytes a sample */
    int decoded;
    long error;
};

static FLAC__StreamDecoderReadStatus decode_read(const FLAC__StreamDecoder *decoder, FLAC__byte buffer[], size_t *bytes,
                                                 void *client) {
    (void)decoder;
    struct decode_state *s = client;
    size_t left = s->count - s->position;
    if (left == 0) {
        *bytes = 0;
        return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM;
    }
    size_t n = *bytes < left ? *bytes : left;
    memcpy(buffer, s->bytes + s->position, n);
    s->position += n;
    *bytes = n;
    return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE;
}

static FLAC__bool decode_eof(const FLAC__StreamDecoder *decoder, void *client) {
    (void)decoder;
    struct decode_state *s = client;
    return s->position >= s->count;
}

static FLAC__StreamDecoderWriteStatus decode_write(const FLAC__StreamDecoder *decoder, const FLAC__Frame *frame,
                                                   const FLAC__int32 *const buffer[], void *client) {
    (void)decoder;
    struct decode_state *s = client;
    if (s->decoded > 0) {
        s->error = TUNEUP_FLAC_ERROR_EXTRA;
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
    }
    if (frame->header.blocksize != s->frames || frame->header.channels != s->channels
        || frame->header.bits_per_sample != s->bits) {
        s->error = TUNEUP_FLAC_ERROR_FORMAT;
        return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT;
    }
    uint8_t *o = s->out;
    if (s->bits == 16) {
        for (unsigned i = 0; i < s->frames; i++)
            for (unsigned c = 0; c < s->channels; c++) {
                uint32_t v = (uint32_t)buffer[c][i];
                *o++ = (uint8_t)v;
                *o++ = (uint8_t)(v >> 8);
            }
    } else {
        for (unsigned i = 0; i < s->frames; i++)
            for (unsigned c = 0; c < s->channels; c++) {
                uint32_t v = (uint32_t)buffer[c][i];
                *o++ = (uint8_t)v;
                *o++ = (uint8_t)(v >> 8);
                *o++ = (uint8_t)(v >> 16);
            }
    }
    s->decoded += 1;
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE;
}

static void decode_error(const FLAC__StreamDecoder *decoder, FLAC__StreamDecoderErrorStatus status, void *client) {
    (void)decoder; (void)status;
    struct decode_state *s = client;
    if (s->error == 0) s->error = TUNEUP_FLAC_ERROR_CORRUPT;
}

/* Each thread's decoder, initialised once and reset before every frame: libFLAC's set-up reads the CPU's features with
 * CPUID (some 75 µs in a virtual machine), which per datagram was most of a receiver's FLAC decoding. Its client data
 * is the thread's own `decode_state`; the decoder is deleted when the thread ends. */
struct thread_decoder {
    FLAC__StreamDecoder *decoder;
    struct decode_state state;
};

static pthread_key_t decoder_key;
static pthread_once_t decoder_once = PTHREAD_ONCE_INIT;

static void thread_decoder_delete(void *value) {
    struct thread_decoder *t = value;
    if (t == NULL) return;
    if (t->decoder != NULL) FLAC__stream_decoder_delete(t->decoder);
    free(t);
}

static void decoder_key_create(void) { pthread_key_create(&decoder_key, thread_decoder_delete); }

/* The calling thread's decoder, ready for a frame (NULL when libFLAC cannot allocate or initialise one). */
static struct thread_decoder *thread_decoder(void) {
    pthread_once(&decoder_once, decoder_key_create);
    struct thread_decoder *t = pthread_getspecific(decoder_key);
    if (t != NULL && FLAC__stream_decoder_reset(t->decoder)) return t;
    if (t != NULL) {  /* a reset that failed: start again with a new one */
        pthread_setspecific(decoder_key, NULL);
        thread_decoder_delete(t);
    }
    t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->decoder = FLAC__stream_decoder_new();
    if (t->decoder == NULL) {
        free(t);
        return NULL;
    }
    FLAC__stream_decoder_set_md5_checking(t->decoder, false);
    /* No "fLaC" and STREAMINFO before the frame: the decoder finds the frame's sync code at once, and the frame
     * header says its block size, channels, sample size and rate. */
    if (FLAC__stream_decoder_init_stream(t->decoder, decode_read, NULL, NULL, NULL, decode_eof, decode_write, NULL,
                                         decode_error, &t->state) != FLAC__STREAM_DECODER_INIT_STATUS_OK) {
        thread_decoder_delete(t);
        return NULL;
    }
    pthread_setspecific(decoder_key, t);
    return t;
}

long tuneup_flac_decode_frame(const uint8_t *bytes, size_t count, unsigned frames, unsigned channels, unsigned bits,
                              uint8_t *out) {
    if (bits != 16 && bits != 24) return TUNEUP_FLAC_ERROR_FORMAT;
    struct thread_decoder *t = thread_decoder();
    if (t == NULL) return TUNEUP_FLAC_ERROR_ALLOCATION;
    t->state = (struct decode_state){.bytes = bytes, .count = count, .frames = frames, .channels = channels, .bits = bits, .out = out};
    FLAC__stream_decoder_process_until_end_of_stream(t->decoder);
    long result;
    if (t->state.error != 0) result = t->state.error;
    else if (t->state.decoded != 1) result = TUNEUP_FLAC_ERROR_NO_FRAME;
    else result = frames;
    t->state.bytes = NULL;
    t->state.out = NULL;
    return result;
}

struct tuneup_flac_stream {
    FLAC__StreamEncoder *encoder;
    struct encode_state state;
    int finished;
};

tuneup_flac_stream *tuneup_flac_stream_new(unsigned frames, unsigned channels, unsigned bits, unsigned rate, unsigned level) {
    if (frames < 16 || frames > FLAC__MAX_BLOCK_SIZE) return NULL;
    tuneup_flac_stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return NULL;
    stream->encoder = FLAC__stream_encoder_new();
    FLAC__bool ok = stream->encoder != NULL
        && FLAC__stream_encoder_set_channels(stream->encoder, channels)
        && FLAC__stream_encoder_set_bits_per_sample(stream->encoder, bits)
        && FLAC__stream_encoder_set_sample_rate(stream->encoder, rate)
        && FLAC__stream_encoder_set_compression_level(stream->encoder, level)
        && FLAC__stream_encoder_set_blocksize(stream->encoder, frames)
        && FLAC__stream_encoder_set_streamable_subset(stream->encoder, false)
        && FLAC__stream_encoder_set_verify(stream->encoder, false)
        && FLAC__stream_encoder_init_stream(stream->encoder, encode_write, NULL, NULL, NULL, &stream->state)
               == FLAC__STREAM_ENCODER_INIT_STATUS_OK;
    if (!ok) {
        tuneup_flac_stream_delete(stream);
        return NULL;
    }
    return stream;
}

long tuneup_flac_stream_encode(tuneup_flac_stream *stream, const int32_t *samples, unsigned count, const int32_t *next,
                               unsigned next_count, uint8_t *out, size_t capacity) {
    if (stream->finished) return TUNEUP_FLAC_ERROR_ENCODER;
    stream->state = (struct encode_state){.out = out, .capacity = capacity};
    FLAC__bool ok = count == 0 || FLAC__stream_encoder_process_interleaved(stream->encoder, samples, count);
    if (ok && next_count > 0) {
        ok = FLAC__stream_encoder_process_interleaved(stream->encoder, next, next_count);
    } else if (ok) {
        stream->finished = 1;
        ok = FLAC__stream_encoder_finish(stream->encoder);
    }
    if (!ok) return TUNEUP_FLAC_ERROR_ENCODER;
    if (stream->state.overflow) return TUNEUP_FLAC_ERROR_TOO_LARGE;
    if (stream->state.frames != 1) return TUNEUP_FLAC_ERROR_ENCODER;
    return (long)stream->state.size;
}

void tuneup_flac_stream_delete(tuneup_flac_stream *stream) {
    if (stream == NULL) return;
    if (stream->encoder != NULL) {
        if (!stream->finished) {
            stream->state = (struct encode_state){0};  /* a last block, if any, is dropped (capacity 0) */
            FLAC__stream_encoder_finish(stream->encoder);
        }
        FLAC__stream_encoder_delete(stream->encoder);
    }
    free(stream);
}
