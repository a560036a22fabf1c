// A learner who already holds a share never spends a second code on it.
import { expect, test } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { accountId, adminApi, createCourse, enterCode, newLearner, shareState, sql } from "./course";

test("a second code for a share already held is refused and stays unused", async ({ context }) => {
  const api = await adminApi();
  const course = await createCourse(api);
  const [first, second] = course.codes;
  const email = await newLearner(context, "second");

  // Two tabs on the share page, both asking for a code.
  const [tabA, tabB] = [await context.newPage(), await context.newPage()];
  await openHydrated(tabA, `/s/${course.slug}`);
  await openHydrated(tabB, `/s/${course.slug}`);
  await expect(shareState(tabB)).toHaveAttribute("data-state", "needs-code");

  // Tab A binds the first code.
  await enterCode(tabA, first);
  await expect(shareState(tabA)).toHaveAttribute("data-state", "pending");
  await tabA.getByRole("link", { name: "Welcome notes" }).click();
  await expect(tabA.locator(".bound-note")).toContainText(`Bound to ${email}`);

  // Tab B still shows the form: the second code is refused, not spent.
  await enterCode(tabB, second);
  await expect(tabB.getByRole("alert")).toContainText("You already have access to this course");
  await expect(shareState(tabB)).toHaveAttribute("data-state", "has-access");

  // The JSON API says the same.
  const response = await context.request.post(`/api/v1/s/${course.slug}/code`, { data: { code: second } });
  expect(response.status()).toBe(409);
  expect((await response.json()).code).toBe("already_has_access");

  expect(sql(`SELECT bound_principal FROM auth_codes WHERE id = '${course.codeIds[0]}'`)).toBe(accountId(email));
  expect(
    sql(`SELECT bound_principal IS NULL AND first_used_at IS NULL AND revoked_at IS NULL FROM auth_codes WHERE id = '${course.codeIds[1]}'`),
  ).toBe("t");
});
