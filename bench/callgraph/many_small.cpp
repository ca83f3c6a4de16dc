// many_small.cpp - many small calls for bench/callgraph/run: a little
// stack-machine interpreter whose every instruction is a call of a small
// non-inlined member function (push, pop, the arithmetic, the variables),
// with a std::map of the heap objects (std::vector) the program allocates
// and frees as it runs, and a std::vector of return addresses.
//
// The interpreted program: for i in 0..N-1, x = (i * 7 + 3) % 1000;
// acc += collatz_steps(x) (a subroutine, called through CALL/RET);
// every 4th iteration an object of x % 16 + 1 words is allocated, and the
// one allocated 8 objects earlier freed; all objects are freed at the end.
//
// Built with -finstrument-functions, the functions of the C++ library
// inlined into these (std::vector::push_back, std::map::find, ...) are
// instrumented too and counted as calls: the operand stack and the
// variables are plain arrays so that most calls are the interpreter's own.
//
// usage: many_small [N]   (default 7000: about 40 million calls); prints the accumulated result
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#define NOINLINE __attribute__((noinline, noclone))

enum Op {
    PUSH,
    LOAD,
    STORE,
    ADD,
    SUB,
    MUL,
    DIV,
    MOD,
    LT,
    EQ,
    JZ,
    JMP,
    CALL,
    RET,
    NEWOBJ,
    FREEOBJ,
    HALT
};

struct Ins {
    Op op;
    long arg;
};

class VM
{
  public:
    long run(const std::vector<Ins> &prog);
    long live_objects() const
    {
        return (long)heap.size();
    }

  private:
    long stack[64];
    long sp = 0;
    long vars[16] = {0};
    std::vector<size_t> rets;
    std::map<long, std::vector<long> *> heap;
    long next_id = 1;

    NOINLINE void push(long v)
    {
        stack[sp++ & 63] = v;
    }
    NOINLINE long pop()
    {
        return stack[--sp & 63];
    }
    NOINLINE void load(long slot)
    {
        push(vars[slot]);
    }
    NOINLINE void store(long slot)
    {
        vars[slot] = pop();
    }
    NOINLINE void add()
    {
        long b = pop(), a = pop();
        push(a + b);
    }
    NOINLINE void sub()
    {
        long b = pop(), a = pop();
        push(a - b);
    }
    NOINLINE void mul()
    {
        long b = pop(), a = pop();
        push(a * b);
    }
    NOINLINE void div()
    {
        long b = pop(), a = pop();
        push(b ? a / b : 0);
    }
    NOINLINE void mod()
    {
        long b = pop(), a = pop();
        push(b ? a % b : 0);
    }
    NOINLINE void lt()
    {
        long b = pop(), a = pop();
        push(a < b);
    }
    NOINLINE void eq()
    {
        long b = pop(), a = pop();
        push(a == b);
    }
    NOINLINE bool truth()
    {
        return pop() != 0;
    }
    NOINLINE void new_object()
    {
        long words = pop();
        long id = next_id++;
        heap[id] = new std::vector<long>((size_t)words, id);
        push(id);
    }
    NOINLINE void free_object()
    {
        long id = pop();
        auto it = heap.find(id);
        if (it != heap.end()) {
            delete it->second;
            heap.erase(it);
        }
    }
    NOINLINE size_t step(const Ins &in, size_t pc);
};

NOINLINE size_t VM::step(const Ins &in, size_t pc)
{
    switch (in.op) {
    case PUSH:
        push(in.arg);
        break;
    case LOAD:
        load(in.arg);
        break;
    case STORE:
        store(in.arg);
        break;
    case ADD:
        add();
        break;
    case SUB:
        sub();
        break;
    case MUL:
        mul();
        break;
    case DIV:
        div();
        break;
    case MOD:
        mod();
        break;
    case LT:
        lt();
        break;
    case EQ:
        eq();
        break;
    case JZ:
        return truth() ? pc + 1 : (size_t)in.arg;
    case JMP:
        return (size_t)in.arg;
    case CALL:
        rets.push_back(pc + 1);
        return (size_t)in.arg;
    case RET: {
        size_t r = rets.back();
        rets.pop_back();
        return r;
    }
    case NEWOBJ:
        new_object();
        break;
    case FREEOBJ:
        free_object();
        break;
    case HALT:
        return (size_t)-1;
    }
    return pc + 1;
}

long VM::run(const std::vector<Ins> &prog)
{
    for (size_t pc = 0; pc != (size_t)-1;)
        pc = step(prog[pc], pc);
    while (!heap.empty()) { // what the program left allocated
        delete heap.begin()->second;
        heap.erase(heap.begin());
    }
    return vars[0];
}

// A tiny assembler: labels are patched once known.
class Asm
{
  public:
    std::vector<Ins> code;
    NOINLINE size_t at() const
    {
        return code.size();
    }
    NOINLINE size_t emit(Op op, long arg = 0)
    {
        code.push_back(Ins{op, arg});
        return code.size() - 1;
    }
    NOINLINE void patch(size_t ins, size_t target)
    {
        code[ins].arg = (long)target;
    }
};

// vars: 0 acc, 1 i, 2 n, 3 x, 4 steps (subroutine), 5 object ring base ..
static std::vector<Ins> program(long n)
{
    Asm a;
    enum { ACC, I, N, X, C, OBJ0 = 6 }; // OBJ0..OBJ0+7: the object ring
    size_t jmain = a.emit(JMP);
    // collatz(x): C = steps until x == 1 (x kept in X)
    size_t sub = a.at();
    a.emit(PUSH, 0);
    a.emit(STORE, C);
    size_t loop = a.at();
    a.emit(LOAD, X);
    a.emit(PUSH, 1);
    a.emit(EQ);
    a.emit(PUSH, 0);
    a.emit(EQ);
    size_t jdone = a.emit(JZ);
    a.emit(LOAD, X);
    a.emit(PUSH, 2);
    a.emit(MOD);
    size_t jeven = a.emit(JZ);
    a.emit(LOAD, X);
    a.emit(PUSH, 3);
    a.emit(MUL);
    a.emit(PUSH, 1);
    a.emit(ADD);
    a.emit(STORE, X);
    size_t jnext = a.emit(JMP);
    size_t even = a.at();
    a.emit(LOAD, X);
    a.emit(PUSH, 2);
    a.emit(DIV);
    a.emit(STORE, X);
    size_t next = a.at();
    a.emit(LOAD, C);
    a.emit(PUSH, 1);
    a.emit(ADD);
    a.emit(STORE, C);
    a.emit(JMP, (long)loop);
    size_t done = a.at();
    a.emit(RET);
    a.patch(jdone, done);
    a.patch(jeven, even);
    a.patch(jnext, next);
    // main
    a.patch(jmain, a.at());
    a.emit(PUSH, n);
    a.emit(STORE, N);
    a.emit(PUSH, 0);
    a.emit(STORE, I);
    size_t top = a.at();
    a.emit(LOAD, I);
    a.emit(LOAD, N);
    a.emit(LT);
    size_t jend = a.emit(JZ);
    a.emit(LOAD, I);
    a.emit(PUSH, 7);
    a.emit(MUL);
    a.emit(PUSH, 3);
    a.emit(ADD);
    a.emit(PUSH, 1000);
    a.emit(MOD);
    a.emit(PUSH, 1);
    a.emit(ADD);
    a.emit(STORE, X);
    a.emit(CALL, (long)sub);
    a.emit(LOAD, ACC);
    a.emit(LOAD, C);
    a.emit(ADD);
    a.emit(STORE, ACC);
    // every 4th i: free the object allocated 8 allocations ago, allocate one
    a.emit(LOAD, I);
    a.emit(PUSH, 4);
    a.emit(MOD);
    size_t jskip = a.emit(JZ); // i % 4 == 0: allocate
    size_t jover = a.emit(JMP);
    size_t alloc = a.at();
    a.patch(jskip, alloc);
    // slot = OBJ0 + (i / 4) % 8 is computed at assembly time for each of 8
    // cases: a chain of comparisons keeps it simple for the machine
    for (long k = 0; k < 8; k++) {
        a.emit(LOAD, I);
        a.emit(PUSH, 4);
        a.emit(DIV);
        a.emit(PUSH, 8);
        a.emit(MOD);
        a.emit(PUSH, k);
        a.emit(EQ);
        size_t jno = a.emit(JZ);
        a.emit(LOAD, OBJ0 + k);
        a.emit(FREEOBJ);
        a.emit(LOAD, X);
        a.emit(PUSH, 16);
        a.emit(MOD);
        a.emit(PUSH, 1);
        a.emit(ADD);
        a.emit(NEWOBJ);
        a.emit(STORE, OBJ0 + k);
        a.patch(jno, a.at());
    }
    a.patch(jover, a.at());
    a.emit(LOAD, I);
    a.emit(PUSH, 1);
    a.emit(ADD);
    a.emit(STORE, I);
    a.emit(JMP, (long)top);
    a.patch(jend, a.at());
    a.emit(HALT);
    return a.code;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], nullptr, 10) : 7000;
    VM vm;
    long acc = vm.run(program(n));
    printf("acc = %ld\n", acc);
    return 0;
}
