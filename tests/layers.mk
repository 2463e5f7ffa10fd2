# layers.mk - `make test-layers` (part of `make test`): the library's objects
# use each other one way only (docs/DESIGN.md, "Layers"). scripts/layer_check.sh
# reads their symbols with nm and fails on a cycle; first it is shown two
# objects that use each other, which it must reject, so the check cannot
# pass by finding nothing.
.PHONY: test-layers
test-layers: $(LIB_OBJ) scripts/layer_check.sh
	@mkdir -p $(B)/layers
	@printf 'int layer_b(void);\nint layer_a(void) { return layer_b(); }\n' > $(B)/layers/a.c
	@printf 'int layer_a(void);\nint layer_b(void) { return layer_a() + 1; }\n' > $(B)/layers/b.c
	@$(CC) -c -o $(B)/layers/a.o $(B)/layers/a.c && $(CC) -c -o $(B)/layers/b.o $(B)/layers/b.c
	@if sh scripts/layer_check.sh $(B)/layers/a.o $(B)/layers/b.o >/dev/null; then \
	  echo "layer_check.sh missed the cycle a <-> b"; exit 1; fi
	sh scripts/layer_check.sh $(LIB_OBJ)
	@echo "layers: no cycle among $(words $(LIB_OBJ)) objects"
