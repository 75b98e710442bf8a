-- The demo's source schema: a small shop, with the identifiers real
-- applications use (mixed case, spaces, a composite key).
CREATE SCHEMA shop;
CREATE TABLE shop.customers (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    email       text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shop.products (
    sku         text PRIMARY KEY,
    title       text NOT NULL,
    price       integer NOT NULL,
    description text
);
CREATE TABLE shop.orders (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id bigint NOT NULL,
    status      text NOT NULL DEFAULT 'new',
    total       integer NOT NULL DEFAULT 0,
    placed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shop."Line Items" (
    "Order Id"  bigint,
    "Line No"   integer,
    sku         text NOT NULL,
    quantity    integer NOT NULL,
    PRIMARY KEY ("Order Id", "Line No")
);

INSERT INTO shop.customers (name, email)
SELECT 'customer ' || g, 'c' || g || '@example.com' FROM generate_series(1, 2000) g;
INSERT INTO shop.products
SELECT 'SKU-' || g, 'product ' || g, 100 + g % 900, repeat('A fine product. ', g % 40)
FROM generate_series(1, 500) g;
INSERT INTO shop.orders (customer_id, status, total)
SELECT 1 + g % 2000, CASE WHEN g % 3 = 0 THEN 'shipped' ELSE 'paid' END, 0
FROM generate_series(1, 30000) g;
INSERT INTO shop."Line Items"
SELECT o, l, 'SKU-' || (1 + (o * l) % 500), 1 + (o + l) % 4
FROM generate_series(1, 30000) o, generate_series(1, 3) l;
UPDATE shop.orders o SET total = s.t
FROM (SELECT li."Order Id" AS id, sum(li.quantity * p.price) AS t
      FROM shop."Line Items" li JOIN shop.products p USING (sku) GROUP BY 1) s
WHERE s.id = o.id;
