"""The CUDA-on-CPU runner's scheduler (C++ pasted into the shim of :mod:`cuda_cpu`): every
CUDA thread is a fiber (ucontext) pinned to one of ``BLEST_CUDA_CPU_THREADS`` worker OS threads
(default: the cores). A fiber that waits at a barrier or polls memory switches back to its
worker, which runs the next fiber it has ready: a switch costs no system call, a waiting fiber
costs nothing, and the machine's load stays at the number of workers, however many threads a
block has.
"""

#: Declarations the shim's barriers and polls use (before ``__syncthreads``).
FIBER_DECLS = r"""
// CUDA threads run as fibers (see tests/cuda_cpu_fibers.py).
struct WarpExchange;
struct Fiber {
    ucontext_t ctx; char* stack = nullptr; std::function<void()> body; unsigned worker = 0;
    Dim3 tid{0, 0, 0}, bid{0, 0, 0}; unsigned char* smem = nullptr;  // its thread-locals
    Barrier* bar = nullptr; WarpExchange* warps = nullptr;
    int action = 0; Barrier* on = nullptr;  // why it switched out
};
struct Barrier {
    unsigned n, count = 0; std::vector<Fiber*> waiting;
    explicit Barrier(unsigned n) : n(n) {}
};
struct Worker {
    std::mutex m; std::condition_variable cv; std::deque<Fiber*> ready; long left = 0;
    ucontext_t home;
};
enum { FIBER_DONE = 1, FIBER_WAIT = 2, FIBER_YIELD = 3 };
static std::vector<Worker*> cpu_workers;
static std::mutex barriers_lock;  // guards every barrier's count and waiting list
thread_local Fiber* current_fiber;
inline void switch_out(int action, Barrier* on) {
    Fiber* f = current_fiber; f->action = action; f->on = on;
    swapcontext(&f->ctx, &cpu_workers[f->worker]->home); }
inline void wait_at(Barrier* bar) { switch_out(FIBER_WAIT, bar); }
template <class T> inline T polled_load(const T* p, int order) {
    switch_out(FIBER_YIELD, nullptr);
    return __atomic_load_n(p, order); }
"""

#: The workers' loop and ``run_fibers`` (after the warp exchange is declared).
FIBER_LOOP = r"""static void make_ready(Fiber* f) {
    Worker* w = cpu_workers[f->worker];
    { std::lock_guard<std::mutex> l(w->m); w->ready.push_back(f); }
    w->cv.notify_one(); }
static void fiber_main(unsigned lo, unsigned hi) {
    Fiber* f = (Fiber*)(((unsigned long long)hi << 32) | lo);
    f->body();
    switch_out(FIBER_DONE, nullptr); }
static void worker_loop(Worker* w) {
    for (;;) {
        Fiber* f;
        {
            std::unique_lock<std::mutex> l(w->m);
            w->cv.wait(l, [&] { return !w->ready.empty() || w->left == 0; });
            if (w->left == 0) return;
            f = w->ready.front(); w->ready.pop_front();
        }
        threadIdx = f->tid; blockIdx = f->bid; dynamic_smem = f->smem;
        block_barrier = f->bar; warps = f->warps; current_fiber = f;
        swapcontext(&w->home, &f->ctx);
        if (f->action == FIBER_DONE) { std::lock_guard<std::mutex> l(w->m); --w->left; continue; }
        if (f->action == FIBER_YIELD) { make_ready(f); continue; }
        Barrier* b = f->on;
        std::vector<Fiber*> go;
        {
            std::lock_guard<std::mutex> l(barriers_lock);
            if (++b->count < b->n) { b->waiting.push_back(f); continue; }
            b->count = 0; go.swap(b->waiting);
        }
        go.push_back(f);
        for (Fiber* g : go) make_ready(g);
    }
}
// Run fn(block, thread) for every thread of `blocks` blocks as fibers on `nworkers` threads.
static void run_fibers(unsigned blocks, unsigned threads, unsigned nworkers,
                       unsigned char** smem_of, std::vector<Barrier*>& bars,
                       std::vector<std::vector<WarpExchange>>& wx,
                       const std::function<void()>& fn) {
    const size_t stack = 1u << 19;
    cpu_workers.clear();
    for (unsigned i = 0; i < nworkers; ++i) cpu_workers.push_back(new Worker());
    std::vector<Fiber*> fibers;
    for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) {
        Fiber* f = new Fiber();
        f->tid = {t, 0, 0}; f->bid = {b, 0, 0}; f->smem = smem_of[b];
        f->bar = bars[b]; f->warps = wx[b].data(); f->body = fn;
        f->worker = (unsigned)(fibers.size() % nworkers);
        f->stack = new char[stack];
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = f->stack; f->ctx.uc_stack.ss_size = stack; f->ctx.uc_link = nullptr;
        const unsigned long long a = (unsigned long long)f;
        makecontext(&f->ctx, (void (*)())fiber_main, 2, (unsigned)(a & 0xffffffffu),
                    (unsigned)(a >> 32));
        cpu_workers[f->worker]->ready.push_back(f);
        ++cpu_workers[f->worker]->left;
        fibers.push_back(f);
    }
    std::vector<std::thread> pool;
    for (Worker* w : cpu_workers) pool.emplace_back(worker_loop, w);
    for (auto& th : pool) th.join();
    for (Fiber* f : fibers) { delete[] f->stack; delete f; }
    for (Worker* w : cpu_workers) delete w;
    cpu_workers.clear();
}
"""
