// The client half of same-host shared memory (see shared_memory.h and warpdp/grpc/_shm_client.py).
#include "shared_memory.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace wd {

namespace {

constexpr size_t SIZE_STEP = 1 << 20;       // memfd sizes are rounded up to this
constexpr size_t KEEP_FILES = 8;            // free memfds kept registered for later calls
constexpr size_t KEEP_BYTES = size_t(256) << 20;

}  // namespace

SharedMemory::~SharedMemory()
{
    for (SharedFile *file : free_)
        drop(file, false);  // closing the socket unregisters them
    if (socket_ >= 0)
        close(socket_);
}

void SharedMemory::disconnect()
{
    close(socket_);
    socket_ = -1;
    connection_++;  // the server dropped what this connection registered
    for (SharedFile *file : free_)
        drop(file, false);
    free_.clear();
}

void SharedMemory::discard(SharedFile *file)
{
    std::lock_guard<std::mutex> hold(lock_);
    std::vector<SharedFile *> kept;
    kept.swap(free_);  // drop() may disconnect, which empties free_
    drop(file, true);
    for (SharedFile *f : kept)
        drop(f, true);
}

void SharedMemory::drop(SharedFile *file, bool unregister)
{
    std::string answer;
    if (unregister && file->connection == connection_)
        ask("unregister " + file->handle, -1, &answer);  // a lost connection dropped it anyway
    munmap(file->map, file->capacity);
    close(file->fd);
    delete file;
}

// A free memfd of at least nbytes, or a new one registered (NULL when that fails); lock_ held.
SharedFile *SharedMemory::acquire(size_t nbytes)
{
    SharedFile *best = nullptr;
    for (SharedFile *file : free_)
        if (file->capacity >= nbytes && (best == nullptr || file->capacity < best->capacity))
            best = file;
    if (best != nullptr) {
        free_.erase(std::find(free_.begin(), free_.end(), best));
        return best;
    }
    const size_t capacity = (nbytes + nbytes / 8 + SIZE_STEP - 1) / SIZE_STEP * SIZE_STEP;
    const int fd = memfd_create("warpdp-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return nullptr;
    void *map = MAP_FAILED;
    if (posix_fallocate(fd, 0, off_t(capacity)) == 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
        map = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    std::string answer;
    if (map == MAP_FAILED || !ask("register", fd, &answer) || answer.compare(0, 3, "ok ") != 0 ||
        answer.size() != 3 + 32) {
        if (map != MAP_FAILED)
            munmap(map, capacity);
        close(fd);
        return nullptr;
    }
    return new SharedFile{fd, answer.substr(3), static_cast<char *>(map), capacity, connection_};
}

bool SharedMemory::ask(const std::string &message, int fd, std::string *answer)
{
    if (socket_ < 0) {
        socket_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        if (socket_ < 0 || socket_name_.size() + 1 > sizeof address.sun_path)
            return false;
        std::memcpy(address.sun_path + 1, socket_name_.data(), socket_name_.size());  // abstract: a NUL first
        const socklen_t length = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + socket_name_.size());
        timeval timeout{30, 0};
        setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        if (connect(socket_, reinterpret_cast<sockaddr *>(&address), length) != 0) {
            close(socket_);
            socket_ = -1;
            return false;
        }
    }
    iovec part{const_cast<char *>(message.data()), message.size()};
    msghdr header{};
    header.msg_iov = &part;
    header.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd >= 0) {
        header.msg_control = control;
        header.msg_controllen = sizeof control;
        cmsghdr *c = CMSG_FIRSTHDR(&header);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    char reply[1024];
    ssize_t got = -1;
    if (sendmsg(socket_, &header, MSG_NOSIGNAL) == ssize_t(message.size()))
        got = recv(socket_, reply, sizeof reply, 0);
    if (got <= 0) {  // a late answer would pass for the next request's: the connection is done
        disconnect();
        return false;
    }
    *answer = std::string(reply, size_t(got));
    return true;
}

SharedFile *SharedMemory::share(google::protobuf::Message &request, const google::protobuf::Message &packed,
                                const Arrays &arrays, size_t reply_bytes)
{
    const google::protobuf::Descriptor *d = packed.GetDescriptor();
    std::vector<const Array *> ordered(size_t(d->field_count()), nullptr);  // in field-number order
    size_t total = 0;
    for (const Array &a : arrays) {
        const google::protobuf::FieldDescriptor *field = d->FindFieldByName(a.field);
        if (field == nullptr)
            return nullptr;
        ordered[size_t(field->index())] = &a;
        total += a.size;
    }
    if (total < SHARED_MIN_BYTES)
        return nullptr;
    const uint64_t reply_offset = reply_bytes > 0 ? (total + 7) / 8 * 8 : 0;
    SharedFile *file;
    {
        std::lock_guard<std::mutex> hold(lock_);
        file = acquire(reply_bytes > 0 ? reply_offset + reply_bytes : total);
    }
    if (file == nullptr)
        return nullptr;
    google::protobuf::Message *shared =
        request.GetReflection()->MutableMessage(&request, request.GetDescriptor()->FindFieldByName("shared_file"));
    const google::protobuf::Descriptor *sd = shared->GetDescriptor();
    const google::protobuf::Reflection *sr = shared->GetReflection();
    size_t at = 0;
    for (const Array *a : ordered) {
        const size_t size = a != nullptr ? a->size : 0;
        if (size > 0)
            std::memcpy(file->map + at, a->data, size);
        at += size;
        sr->AddUInt64(shared, sd->FindFieldByName("sizes"), size);
    }
    sr->SetString(shared, sd->FindFieldByName("handle"), file->handle);
    sr->SetUInt64(shared, sd->FindFieldByName("reply_offset"), reply_offset);
    return file;
}

void SharedMemory::release(SharedFile *file)
{
    std::lock_guard<std::mutex> hold(lock_);
    size_t kept = 0;
    for (const SharedFile *f : free_)
        kept += f->capacity;
    if (file->connection == connection_ && free_.size() < KEEP_FILES && kept + file->capacity <= KEEP_BYTES)
        free_.push_back(file);
    else
        drop(file, true);
}

void pack(google::protobuf::Message &packed, const Arrays &arrays)
{
    const google::protobuf::Descriptor *d = packed.GetDescriptor();
    for (const Array &a : arrays)
        if (a.size > 0)
            packed.GetReflection()->SetString(&packed, d->FindFieldByName(a.field),
                                              std::string(static_cast<const char *>(a.data), a.size));
}

void unshare(google::protobuf::Message &request, google::protobuf::Message &packed, const Arrays &arrays)
{
    request.GetReflection()->ClearField(&request, request.GetDescriptor()->FindFieldByName("shared_file"));
    pack(packed, arrays);
}

bool is_local_target(const std::string &target)
{
    if (target.rfind("unix:", 0) == 0 || target.rfind("unix-abstract:", 0) == 0)
        return true;
    std::string address = target;
    for (const char *scheme : {"ipv4:", "ipv6:", "dns:///", "dns:"})
        if (address.rfind(scheme, 0) == 0) {
            address = address.substr(std::strlen(scheme));
            break;
        }
    std::string host = address[0] == '[' ? address.substr(1, address.find(']') - 1)
                                         : address.substr(0, address.rfind(':'));
    if (host == "localhost")
        return true;
    in_addr v4;
    in6_addr v6;
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace wd
