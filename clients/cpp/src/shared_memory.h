// Same-host transfer of a request's arrays (SharedFile in warpdp.proto; the protocol of
// warpdp/grpc/_shm_protocol.py): the arrays go into a sealed memfd handed to the server over its
// Unix socket, and the request carries only the memfd's handle and the arrays' sizes. The
// server may write the results back into the same memfd (SharedFile.reply_offset). Memfds are
// kept registered and reused from call to call (a small pool, as warpdp/grpc/_shm_client.py).
#ifndef WARPDP_SHARED_MEMORY_H
#define WARPDP_SHARED_MEMORY_H

#include <google/protobuf/message.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace wd {

// A registered memfd, mapped for as long as it lives.
struct SharedFile {
    int fd = -1;
    std::string handle;
    char *map = nullptr;
    size_t capacity = 0;
    uint64_t connection = 0;  // the socket connection it was registered on
};

// One array of a request's packed-arrays message: the bytes of its field `field`.
struct Array {
    const char *field;
    const void *data;
    size_t size;
};
using Arrays = std::vector<Array>;

// Copies the arrays into `packed`'s fields (the request then carries them in the message).
void pack(google::protobuf::Message &packed, const Arrays &arrays);

// A connection to a server's shared-memory socket.
class SharedMemory {
public:
    explicit SharedMemory(std::string socket_name) : socket_name_(std::move(socket_name)) {}
    ~SharedMemory();
    SharedMemory(const SharedMemory &) = delete;
    SharedMemory &operator=(const SharedMemory &) = delete;

    // Copies the arrays of `packed` (a request's packed-arrays message, left empty) into a
    // registered memfd in its fields' order, with room for reply_bytes of results after them
    // (0: none asked), and fills `request`'s shared_file (its reply_offset too when
    // reply_bytes > 0); returns the memfd to give back with release() after the reply, or NULL
    // (request untouched) when the arrays are small or the memfd or its registration failed:
    // the caller then sends the arrays in the message (pack).
    SharedFile *share(google::protobuf::Message &request, const google::protobuf::Message &packed,
                      const Arrays &arrays, size_t reply_bytes);
    void release(SharedFile *file);
    // Unregisters `file` and every free memfd (the server refused one: e.g. it restarted).
    void discard(SharedFile *file);

private:
    void disconnect();
    bool ask(const std::string &message, int fd, std::string *answer);
    SharedFile *acquire(size_t nbytes);
    void drop(SharedFile *file, bool unregister);

    std::string socket_name_;
    std::mutex lock_;  // the socket and the pool
    int socket_ = -1;
    uint64_t connection_ = 0;
    std::vector<SharedFile *> free_;
};

// Clears `request`'s shared_file and puts the arrays into `packed` (pack).
void unshare(google::protobuf::Message &request, google::protobuf::Message &packed, const Arrays &arrays);

// Requests whose arrays hold at least this many bytes go through shared memory.
constexpr size_t SHARED_MIN_BYTES = 64 * 1024;

// Whether a gRPC target names this host (loopback address, localhost or a Unix socket).
bool is_local_target(const std::string &target);

}  // namespace wd

#endif
