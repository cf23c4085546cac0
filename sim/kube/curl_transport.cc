#include "sim/kube/curl_transport.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>

#include "sim/common/error.h"
#include "sim/kube/retry_policy.h"

namespace cpscale::kube {
namespace {

// Enough idle handles for a busy generator without holding memory forever.
constexpr std::size_t kMaxPooledEasy = 1024;
// The epoll tag of the wakeup eventfd; sockets are tagged (multi index << 32 | fd).
constexpr std::uint64_t kWakeTag = ~std::uint64_t{0};

// libcurl's memory, through curl_global_init_mem. libcurl (7.88) allocates for every
// transfer a 16 KiB receive buffer and a ~1.5 KiB HTTP/2 stream state, for every
// request with a body an upload buffer (64 KiB unless CURLOPT_UPLOAD_BUFFERSIZE says
// less: we set its 16 KiB minimum), and frees them when the transfer is done. All are
// above glibc's per-thread cache (1 KiB), so each such malloc first consolidated the
// fastbins and sorted the unsorted bin: on a busy worker, with dozens of small frees
// per request, over 10 % of the generator's CPU. Blocks from 1 KiB up to the receive
// buffer's size come from per-thread free lists of four size classes instead;
// everything else goes to malloc. Each block carries a 16-byte header (malloc's
// alignment) saying which it is.
namespace curlmem {

constexpr std::size_t kHeader = 16;
constexpr std::size_t kPooledMin = 1024;                                 // above this, up to
constexpr std::size_t kClassSize[] = {2048, 4096, 8192, 16 * 1024 + 1};  // the receive buffer
constexpr std::size_t kClasses = std::size(kClassSize);
constexpr std::size_t kMaxFree = 128;  // per class and thread: at most ~4 MiB idle
constexpr std::uint64_t kPlain = ~std::uint64_t{0};

struct FreeLists {
  void* head[kClasses] = {};
  std::size_t count[kClasses] = {};
  ~FreeLists() {
    for (std::size_t c = 0; c < kClasses; ++c) {
      while (head[c]) {
        void* next = *static_cast<void**>(head[c]);
        std::free(head[c]);
        head[c] = next;
      }
      count[c] = kMaxFree;  // a block released after this goes back to malloc
    }
  }
};
thread_local FreeLists freeLists;

void* tag(void* block, std::uint64_t kind) {
  if (block == nullptr) return nullptr;
  *static_cast<std::uint64_t*>(block) = kind;
  return static_cast<char*>(block) + kHeader;
}
void* blockOf(void* p) { return static_cast<char*>(p) - kHeader; }
std::uint64_t kindOf(void* p) { return *static_cast<std::uint64_t*>(blockOf(p)); }

void* allocate(std::size_t n) {
  if (n > kPooledMin && n <= kClassSize[kClasses - 1]) {
    std::size_t c = 0;
    while (n > kClassSize[c]) ++c;
    if (void* b = freeLists.head[c]) {
      freeLists.head[c] = *static_cast<void**>(b);
      --freeLists.count[c];
      return tag(b, c);
    }
    return tag(std::malloc(kHeader + kClassSize[c]), c);
  }
  return tag(std::malloc(kHeader + n), kPlain);
}

void release(void* p) {
  if (p == nullptr) return;
  void* b = blockOf(p);
  const std::uint64_t c = kindOf(p);
  if (c < kClasses && freeLists.count[c] < kMaxFree) {
    *static_cast<void**>(b) = freeLists.head[c];
    freeLists.head[c] = b;
    ++freeLists.count[c];
    return;
  }
  std::free(b);
}

void* reallocate(void* p, std::size_t n) {
  if (p == nullptr) return allocate(n);
  const std::uint64_t c = kindOf(p);
  if (c < kClasses) {
    if (n <= kClassSize[c]) return p;
    void* q = allocate(n);
    if (q != nullptr) {
      std::memcpy(q, p, kClassSize[c]);
      release(p);
    }
    return q;
  }
  return tag(std::realloc(blockOf(p), kHeader + n), kPlain);
}

char* duplicate(const char* s) {
  const std::size_t n = std::strlen(s) + 1;
  auto* q = static_cast<char*>(allocate(n));
  if (q != nullptr) std::memcpy(q, s, n);
  return q;
}

void* zeroed(std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  void* q = allocate(count * size);
  if (q != nullptr) std::memset(q, 0, count * size);
  return q;
}

}  // namespace curlmem

void globalInit() {
  static std::once_flag once;
  static CURLcode rc = CURLE_OK;
  std::call_once(once, [] {
    rc = curl_global_init_mem(CURL_GLOBAL_DEFAULT, curlmem::allocate, curlmem::release, curlmem::reallocate,
                              curlmem::duplicate, curlmem::zeroed);
  });
  if (rc != CURLE_OK) throw UnavailableError(std::string("libcurl initialisation failed: ") + curl_easy_strerror(rc));
}

TransportOutcome mapCode(CURLcode code) {
  switch (code) {
    case CURLE_OK: return TransportOutcome::kOk;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT: return TransportOutcome::kConnectFailed;
    case CURLE_OPERATION_TIMEDOUT: return TransportOutcome::kTimeout;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED: return TransportOutcome::kTlsFailed;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK: return TransportOutcome::kAborted;
    default: return TransportOutcome::kProtocolError;
  }
}

std::string_view versionString(long v) {
  switch (v) {
    case CURL_HTTP_VERSION_1_0: return "1.0";
    case CURL_HTTP_VERSION_1_1: return "1.1";
    case CURL_HTTP_VERSION_2_0: return "2";
    case CURL_HTTP_VERSION_3: return "3";
    default: return "";
  }
}

long toMillis(engine::Duration d) {
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  return static_cast<long>(std::max<decltype(ms)>(ms, 0));
}

void setBlob(CURL* e, CURLoption opt, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(e, opt, &blob);
}

}  // namespace

struct CurlTransport::Active {
  RequestId id = 0;
  CURL* easy = nullptr;
  HttpRequest request;
  ResponseHandler done;
  HttpResponse response;
  curl_slist* headers = nullptr;
  bool ownsHeaders = false;  // headers is this request's own, not a shared list
  bool added = false;        // to its multi handle
  bool stream = false;       // in the stream multi handle
  std::size_t replica = 0;
  bool cancelRequested = false;  // cancel() from inside a curl callback
  bool consumerStopped = false;  // onBodyChunk returned false
  std::size_t bodySent = 0;      // of request.body, handed to libcurl so far
  bool resendable = false;       // idempotent: may go out twice
  CURLcode submitError = CURLE_OK;
  char errbuf[CURL_ERROR_SIZE] = {0};

  static size_t onHeader(char* data, size_t size, size_t n, void* self) {
    auto* a = static_cast<Active*>(self);
    std::string_view line(data, size * n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    if (line.rfind("HTTP/", 0) == 0) {
      // A new status line (after 100 Continue, or a redirect): start over.
      a->response.headers.clear();
    } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
      std::string name(line.substr(0, colon));
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      a->response.headers.push_back({std::move(name), std::string(value)});
    }
    return size * n;
  }

  static size_t onBody(char* data, size_t size, size_t n, void* self) {
    auto* a = static_cast<Active*>(self);
    if (a->cancelRequested) return 0;  // makes curl end the transfer with WRITE_ERROR
    if (a->request.onBodyChunk) {
      if (!a->request.onBodyChunk(std::string_view(data, size * n))) {
        a->consumerStopped = true;
        return 0;
      }
    } else {
      a->response.body.append(data, size * n);
    }
    return size * n;
  }

  static size_t onRead(char* buffer, size_t size, size_t n, void* self) {
    auto* a = static_cast<Active*>(self);
    const std::string& body = a->request.body;
    const std::size_t k = std::min(size * n, body.size() - a->bodySent);
    std::memcpy(buffer, body.data() + a->bodySent, k);
    a->bodySent += k;
    return k;
  }

  // libcurl rewinds a request's body to send it again on a new connection when the
  // kept-alive one it went out on died before any answer arrived. An idempotent
  // request may go out twice; any other may already have taken effect (the server had
  // it), so the rewind is refused and the request fails (CURLE_SEND_FAIL_REWIND)
  // instead of being resent behind the caller's retry policy.
  static int onSeek(void* self, curl_off_t offset, int origin) {
    auto* a = static_cast<Active*>(self);
    if (!a->resendable || origin != SEEK_SET || offset != 0) return CURL_SEEKFUNC_FAIL;
    a->bodySent = 0;
    return CURL_SEEKFUNC_OK;
  }
};

CurlTransport::CurlTransport(const RestConfig& config, CurlTransportOptions options)
    : config_(config), options_(std::move(options)) {
  globalInit();
  std::vector<std::string> urls = options_.servers;
  if (urls.empty()) urls.push_back(config_.server);
  for (const auto& u : urls) {
    if (u.empty()) throw ConfigError("kubeconfig", "server", "missing");
  }
  if (config_.clientCertPem.empty() != config_.clientKeyPem.empty()) {
    throw ConfigError(config_.sourceFile, "client-certificate/client-key", "must be given together");
  }
  for (const auto& url : urls) {
    Replica r;
    r.server = url;
    r.baseUrl = url;
    if (!server_.empty()) server_ += ", ";
    server_ += url;
    stats_.perServer.push_back(ServerCounts{url, 0, 0});
    if (!config_.tlsServerName.empty()) {
      // Verify the certificate against tls-server-name while connecting to the real
      // host: address the URL to that name and map it to the host with CONNECT_TO.
      CURLU* u = curl_url();
      char *scheme = nullptr, *host = nullptr, *port = nullptr, *path = nullptr;
      bool ok = curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
                curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
                curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
                curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
                curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK;
      if (ok) {
        std::string prefix = path;
        while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
        r.baseUrl = std::string(scheme) + "://" + config_.tlsServerName + ":" + port + prefix;
        std::string connectTo = config_.tlsServerName + ":" + port + ":" + host + ":" + port;
        r.connectTo = curl_slist_append(nullptr, connectTo.c_str());
      }
      curl_free(scheme);
      curl_free(host);
      curl_free(port);
      curl_free(path);
      curl_url_cleanup(u);
      if (!ok) {
        for (auto& done : replicas_) curl_slist_free_all(static_cast<curl_slist*>(done.connectTo));
        throw ConfigError(config_.sourceFile, "server", "cannot parse server URL '" + url + "'");
      }
    }
    replicas_.push_back(std::move(r));
  }
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wakeFd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epollFd_ < 0 || wakeFd_ < 0) {
    int err = errno;
    if (epollFd_ >= 0) ::close(epollFd_);
    if (wakeFd_ >= 0) ::close(wakeFd_);
    for (auto& r : replicas_) curl_slist_free_all(static_cast<curl_slist*>(r.connectTo));
    throw UnavailableError(std::string("cannot create the transport's poll set: ") + std::strerror(err));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, wakeFd_, &ev);
  initMulti(requests_, 0, options_.maxHostConnections, options_.maxConcurrentStreams);
  initMulti(streams_, 1, options_.maxStreamConnections, options_.streamsPerConnection);
}

void CurlTransport::initMulti(Multi& m, std::uint32_t index, long maxHostConnections, long maxStreams) {
  m.owner = this;
  m.index = index;
  m.handle = curl_multi_init();
  if (m.handle == nullptr) throw UnavailableError("libcurl: cannot create a multi handle");
  curl_multi_setopt(m.handle, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  curl_multi_setopt(m.handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxHostConnections);
  curl_multi_setopt(m.handle, CURLMOPT_MAX_CONCURRENT_STREAMS, maxStreams);
  curl_multi_setopt(m.handle, CURLMOPT_SOCKETFUNCTION, &CurlTransport::onSocket);
  curl_multi_setopt(m.handle, CURLMOPT_SOCKETDATA, &m);
  curl_multi_setopt(m.handle, CURLMOPT_TIMERFUNCTION, &CurlTransport::onTimer);
  curl_multi_setopt(m.handle, CURLMOPT_TIMERDATA, &m);
}

CurlTransport::~CurlTransport() {
  for (auto& [id, a] : active_) {
    Multi& m = a->stream ? streams_ : requests_;
    if (a->added) curl_multi_remove_handle(m.handle, a->easy);
    curl_easy_cleanup(a->easy);
    if (a->ownsHeaders) curl_slist_free_all(a->headers);
  }
  active_.clear();
  for (auto& l : headerLists_) curl_slist_free_all(static_cast<curl_slist*>(l.list));
  for (void* e : freeEasy_) curl_easy_cleanup(e);
  // The multi handles may still report sockets going away: the poll set outlives them.
  if (requests_.handle) curl_multi_cleanup(requests_.handle);
  if (streams_.handle) curl_multi_cleanup(streams_.handle);
  for (auto& r : replicas_) curl_slist_free_all(static_cast<curl_slist*>(r.connectTo));
  if (wakeFd_ >= 0) ::close(wakeFd_);
  if (epollFd_ >= 0) ::close(epollFd_);
}

int CurlTransport::onSocket(void* /*easy*/, int fd, int what, void* multi, void* /*socketp*/) {
  auto* m = static_cast<Multi*>(multi);
  const int ep = m->owner->epollFd_;
  if (what == CURL_POLL_REMOVE) {
    ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    return 0;
  }
  epoll_event ev{};
  ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  ev.data.u64 = (static_cast<std::uint64_t>(m->index) << 32) | static_cast<std::uint32_t>(fd);
  if (::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return 0;
}

int CurlTransport::onTimer(void* /*handle*/, long timeoutMs, void* multi) {
  auto* m = static_cast<Multi*>(multi);
  if (timeoutMs < 0) {
    m->timerAt.reset();
  } else {
    m->timerAt = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  }
  return 0;
}

void* CurlTransport::acquireEasy() {
  if (!freeEasy_.empty()) {
    void* e = freeEasy_.back();
    freeEasy_.pop_back();
    return e;
  }
  CURL* e = curl_easy_init();
  if (e == nullptr) return nullptr;
  // Everything below is the same for every request, so it is set once per handle
  // and survives reuse; per-request options are all overwritten in submit().
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      e, CURLOPT_HTTP_VERSION,
      options_.http2 ? static_cast<long>(CURL_HTTP_VERSION_2TLS) : static_cast<long>(CURL_HTTP_VERSION_1_1));
  // Wait for a stream on an existing connection instead of opening a new one when
  // many requests start together: this is what makes HTTP/2 reuse actually happen.
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, toMillis(options_.connectTimeout));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, config_.insecureSkipTlsVerify ? 0L : 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, config_.insecureSkipTlsVerify ? 0L : 2L);
  if (!config_.caPem.empty()) setBlob(e, CURLOPT_CAINFO_BLOB, config_.caPem);
  if (!config_.clientCertPem.empty()) {
    setBlob(e, CURLOPT_SSLCERT_BLOB, config_.clientCertPem);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    setBlob(e, CURLOPT_SSLKEY_BLOB, config_.clientKeyPem.reveal());
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (!config_.bearerToken.empty()) {
    // libcurl builds the Authorization header itself: the token never enters our
    // header lists, so nothing that prints a request can show it.
    curl_easy_setopt(e, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BEARER));
    curl_easy_setopt(e, CURLOPT_XOAUTH2_BEARER, config_.bearerToken.reveal().c_str());
  }
  // The smallest upload buffer libcurl allows (its default is 64 KiB, allocated per
  // request): our bodies are read from memory by onRead, so a bigger one buys nothing.
  curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Active::onHeader);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Active::onBody);
  // Bodies are read through a callback rather than CURLOPT_POSTFIELDS, whose rewind
  // libcurl does on its own: onSeek decides whether a body may be sent twice.
  curl_easy_setopt(e, CURLOPT_READFUNCTION, &Active::onRead);
  curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &Active::onSeek);
  return e;
}

void CurlTransport::releaseEasy(void* easy) {
  // Clear everything that points into the finished request before pooling.
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, nullptr);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, nullptr);
  curl_easy_setopt(easy, CURLOPT_READDATA, nullptr);
  curl_easy_setopt(easy, CURLOPT_SEEKDATA, nullptr);
  if (freeEasy_.size() < kMaxPooledEasy) {
    freeEasy_.push_back(easy);
  } else {
    curl_easy_cleanup(easy);
  }
}

RequestId CurlTransport::submit(HttpRequest req, ResponseHandler done) {
  auto a = std::make_unique<Active>();
  a->id = ++nextId_;
  a->stream = req.stream;
  // Round-robin per request, and separately per stream, as a load balancer would.
  std::size_t& next = a->stream ? nextStreamReplica_ : nextRequestReplica_;
  a->replica = next;
  next = (next + 1) % replicas_.size();
  ServerCounts& counts = stats_.perServer[a->replica];
  ++(a->stream ? counts.streams : counts.requests);
  if (a->stream) ++streamsOpen_;
  a->request = std::move(req);
  a->done = std::move(done);
  a->easy = static_cast<CURL*>(acquireEasy());
  Active* p = a.get();
  RequestId id = p->id;
  active_.emplace(id, std::move(a));
  if (p->easy == nullptr) {
    p->submitError = CURLE_OUT_OF_MEMORY;
    deferredCancels_.push_back(id);  // reported from the next poll(), never from here
    return id;
  }
  CURL* e = p->easy;
  const HttpRequest& r = p->request;
  const Replica& replica = replicas_[p->replica];
  std::string url = replica.baseUrl + r.path;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_CONNECT_TO, replica.connectTo);
  curl_easy_setopt(e, CURLOPT_PRIVATE, p);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, p);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, nullptr);
  if (r.method == "GET" || (r.method != "POST" && r.body.empty() && r.method != "PUT" && r.method != "PATCH")) {
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  } else {
    // The body lives in Active until completion; onRead hands it over.
    p->resendable = RetryPolicy::idempotent(r.method);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_easy_setopt(e, CURLOPT_READDATA, p);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, p);
  }
  if (r.method != "GET" && r.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  p->headers = static_cast<curl_slist*>(headerList(r.headers, p->ownsHeaders));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
  engine::Duration timeout = r.timeout > engine::Duration::zero() ? r.timeout : options_.defaultTimeout;
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, toMillis(timeout));

  CURLMcode mc = curl_multi_add_handle((p->stream ? streams_ : requests_).handle, e);
  if (mc != CURLM_OK) {
    p->submitError = CURLE_FAILED_INIT;
    deferredCancels_.push_back(id);
    return id;
  }
  p->added = true;
  return id;
}

void* CurlTransport::headerList(const std::vector<Header>& headers, bool& owned) {
  const auto same = [&headers](const HeaderList& l) {
    return l.headers.size() == headers.size() &&
           std::equal(headers.begin(), headers.end(), l.headers.begin(),
                      [](const Header& a, const Header& b) { return a.name == b.name && a.value == b.value; });
  };
  for (const HeaderList& l : headerLists_)
    if (same(l)) {
      owned = false;
      return l.list;
    }
  curl_slist* list = nullptr;
  for (const auto& h : headers) {
    std::string line = h.name + ": " + h.value;
    list = curl_slist_append(list, line.c_str());
  }
  // Without this, HTTP/1.1 bodies over 1 MiB wait a round trip for 100 Continue.
  list = curl_slist_append(list, "Expect:");
  owned = headerLists_.size() >= kMaxHeaderLists;
  if (!owned) headerLists_.push_back({headers, list});
  return list;
}

void CurlTransport::complete(Active* p, int code) {
  auto node = active_.extract(p->id);
  std::unique_ptr<Active> a = std::move(node.mapped());
  CURL* e = a->easy;
  HttpResponse resp = std::move(a->response);
  bool handshakeCut = false;
  if (a->stream) --streamsOpen_;
  if (e) {
    if (code == CURLE_OPERATION_TIMEDOUT && a->added) shutDownIfStalled(e, a->request.timeout);
    if (a->added) curl_multi_remove_handle((a->stream ? streams_ : requests_).handle, e);
    long status = 0, version = 0, connects = 0, osErrno = 0;
    curl_off_t connectedAt = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &osErrno);
    curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &connectedAt);
    // A new connection that the peer reset or closed before its TLS handshake was done
    // (OpenSSL's SSL_ERROR_SYSCALL: the socket failed, no TLS alert came).
    handshakeCut = code == CURLE_SSL_CONNECT_ERROR && connects > 0 && connectedAt == 0 &&
                   (osErrno == ECONNRESET || osErrno == EPIPE || osErrno == ECONNABORTED ||
                    std::strstr(a->errbuf, "SSL_ERROR_SYSCALL") != nullptr);
    resp.status = static_cast<int>(status);
    resp.httpVersion = std::string(versionString(version));
    stats_.connectionsOpened += static_cast<std::uint64_t>(connects);
    if (version == CURL_HTTP_VERSION_2_0) ++stats_.http2Responses;
  }
  auto curlCode = static_cast<CURLcode>(code);
  resp.outcome = mapCode(curlCode);
  // Not a TLS failure but a connection that could not be made: the request was never
  // sent and, unlike a certificate problem, trying again may work.
  if (handshakeCut) resp.outcome = TransportOutcome::kConnectFailed;
  if (a->cancelRequested) {
    resp.outcome = TransportOutcome::kAborted;
    resp.detail = "cancelled";
  } else if (a->consumerStopped) {
    resp.outcome = TransportOutcome::kAborted;
    resp.detail = "aborted by the body consumer";
  } else if (curlCode == CURLE_SEND_FAIL_REWIND) {
    resp.detail = "the connection closed after the request was sent and before an answer arrived; a " +
                  a->request.method + " is not sent again (it may have taken effect)";
  } else if (curlCode != CURLE_OK) {
    // curl's messages name the host and the failing step, never headers or tokens.
    resp.detail = curl_easy_strerror(curlCode);
    if (a->errbuf[0] != '\0') resp.detail += std::string(": ") + a->errbuf;
  }
  if (a->ownsHeaders) curl_slist_free_all(a->headers);
  a->headers = nullptr;
  if (e) releaseEasy(e);
  ++stats_.completed;
  if (a->done) a->done(std::move(resp));
}

void CurlTransport::shutDownIfStalled(void* easy, engine::Duration requestTimeout) {
  // libcurl closes an HTTP/1.1 connection whose transfer timed out, but keeps a
  // multiplexed (HTTP/2) one: the timeout was one stream's. If nothing at all arrived on
  // that connection for half the timeout while the stream waited, the connection is
  // stalled, not the stream, and every request sent on it would time out in turn.
  // Shutting its socket down (libcurl still owns and closes it) makes the streams still
  // on it fail and libcurl drop the connection instead of reusing it.
  curl_socket_t fd = CURL_SOCKET_BAD;
  // Only valid while the handle is in its multi handle: it finds the connection there.
  if (curl_easy_getinfo(static_cast<CURL*>(easy), CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK || fd == CURL_SOCKET_BAD) {
    return;  // the connection is gone already
  }
  const engine::Duration timeout = requestTimeout > engine::Duration::zero() ? requestTimeout : options_.defaultTimeout;
  const auto now = std::chrono::steady_clock::now();
  auto heard = lastInput_.find(fd);
  if (heard != lastInput_.end() && now - heard->second < timeout / 2) return;  // others' streams flow
  ::shutdown(fd, SHUT_RDWR);
  lastInput_.erase(fd);
}

void CurlTransport::cancel(RequestId id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  it->second->cancelRequested = true;
  if (inPerform_) {
    // Called from a curl callback (e.g. a watch consumer): a handle cannot be removed
    // there, so finish it once libcurl has returned.
    deferredCancels_.push_back(id);
    return;
  }
  complete(it->second.get(), CURLE_ABORTED_BY_CALLBACK);
}

void CurlTransport::processDeferredCancels() {
  std::vector<RequestId> ids;
  ids.swap(deferredCancels_);
  for (RequestId id : ids) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    Active* a = it->second.get();
    complete(a, a->submitError != CURLE_OK ? a->submitError : CURLE_ABORTED_BY_CALLBACK);
  }
}

std::size_t CurlTransport::drainCompleted(Multi& m) {
  // Collect first, then run handlers: a handler may cancel another request whose
  // message is already queued, so each one is looked up again by id.
  std::vector<std::pair<RequestId, CURLcode>> done;
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(m.handle, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    Active* a = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &a);
    if (a) done.emplace_back(a->id, msg->data.result);
  }
  std::size_t n = 0;
  for (auto [id, code] : done) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    complete(it->second.get(), code);
    ++n;
  }
  return n;
}

void CurlTransport::action(Multi& m, int fd, int events) {
  int running = 0;
  inPerform_ = true;
  curl_multi_socket_action(m.handle, fd, events, &running);
  inPerform_ = false;
}

std::optional<engine::Duration> CurlTransport::runTimers() {
  std::optional<engine::Duration> next;
  for (Multi* m : {&requests_, &streams_}) {
    // A timeout action may ask for another one at once (0 ms); a few rounds settle it
    // without letting a busy multi starve the other.
    for (int round = 0; round < 4 && m->timerAt && *m->timerAt <= std::chrono::steady_clock::now(); ++round) {
      m->timerAt.reset();
      action(*m, CURL_SOCKET_TIMEOUT, 0);
    }
    if (m->timerAt) {
      auto left = std::max<engine::Duration>(
          engine::Duration::zero(),
          std::chrono::duration_cast<engine::Duration>(*m->timerAt - std::chrono::steady_clock::now()));
      next = next ? std::min(*next, left) : left;
    }
  }
  return next;
}

std::size_t CurlTransport::poll(engine::Duration maxWait) {
  const std::uint64_t before = stats_.completed;
  auto finished = [&] {
    drainCompleted(requests_);
    drainCompleted(streams_);
    processDeferredCancels();
    return static_cast<std::size_t>(stats_.completed - before);
  };
  processDeferredCancels();
  std::optional<engine::Duration> timer = runTimers();
  if (finished() > 0) return stats_.completed - before;
  // A zero wait still reads what is ready: callers that poll without blocking (the
  // scraper's loop) rely on it for progress.
  engine::Duration wait = std::max(engine::Duration::zero(), timer ? std::min(*timer, maxWait) : maxWait);
  // Both multi handles' sockets and the wakeup are in one set: a watch event and a
  // response are each handled as soon as they arrive, whichever comes first.
  epoll_event events[64];
  int n = ::epoll_wait(epollFd_, events, 64, static_cast<int>(std::min<long>(toMillis(wait), 1L << 30)));
  for (int i = 0; i < n; ++i) {
    const std::uint64_t tag = events[i].data.u64;
    if (tag == kWakeTag) {
      std::uint64_t drained = 0;
      [[maybe_unused]] auto r = ::read(wakeFd_, &drained, sizeof drained);
      continue;
    }
    int flags = 0;
    if (events[i].events & EPOLLIN) {
      flags |= CURL_CSELECT_IN;
      lastInput_[static_cast<int>(tag & 0xffffffffu)] = std::chrono::steady_clock::now();
    }
    if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
    if (events[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
    Multi& m = (tag >> 32) == 0 ? requests_ : streams_;
    action(m, static_cast<int>(tag & 0xffffffffu), flags);
  }
  runTimers();
  return finished();
}

void CurlTransport::wakeup() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto r = ::write(wakeFd_, &one, sizeof one);
}

}  // namespace cpscale::kube
