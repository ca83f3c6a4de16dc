// typed - heap blocks whose types DWARF tells, for `memviz inspect`.
//
// g_shapes holds two objects through base-class pointers: a Circle
// (radius 2.5, id 7) and a Rect (3 by 4, id 8); their vtables say what
// they are. g_list is a C-style list of two nodes (values 11 and 22)
// whose type the path from g_list tells. Prints the four addresses, one
// per line: circle, rect, first node, second node.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct Shape {
    virtual ~Shape() {}
    virtual double area() const = 0;
    int id = 0;
};

struct Circle : Shape {
    double radius = 0;
    double area() const override
    {
        return 3.14159 * radius * radius;
    }
};

struct Rect : Shape {
    double w = 0, h = 0;
    double area() const override
    {
        return w * h;
    }
};

struct node {
    struct node *next;
    int64_t value;
    char tag[8];
};

Shape *g_shapes[2];
struct node *g_list;

__attribute__((noinline)) static struct node *push(struct node *next, int64_t value)
{
    struct node *n = static_cast<struct node *>(calloc(1, sizeof(*n)));
    if (!n)
        abort();
    n->next = next;
    n->value = value;
    n->tag[0] = 'n';
    return n;
}

int main()
{
    Circle *c = new Circle;
    c->id = 7;
    c->radius = 2.5;
    Rect *r = new Rect;
    r->id = 8;
    r->w = 3;
    r->h = 4;
    g_shapes[0] = c;
    g_shapes[1] = r;
    g_list = push(push(nullptr, 22), 11);
    std::printf("%p\n%p\n%p\n%p\n", static_cast<void *>(c), static_cast<void *>(r),
                static_cast<void *>(g_list), static_cast<void *>(g_list->next));
    return 0;
}
