// What cannot be undone asks first: revoking a batch's unused codes, an
// API token, a webhook endpoint. Without the tick the browser does not
// send the form; with it, the change is made (checked in the database).
import { expect, test } from "@playwright/test";
import { openHydrated, signIn } from "./fixtures";
import { adminApi, createCourse, specTenant, sql } from "./course";

test("destructive console actions need their confirmation tick", async ({ page }) => {
  test.setTimeout(60_000);
  const course = await createCourse(await adminApi(), { codes: 2 });
  const owner = await specTenant();
  const tenant = owner.id;
  const unusedOf = () =>
    sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND revoked_at IS NULL`);

  await openHydrated(page, `/login?next=/admin/t/${tenant}/s/${course.id}`);
  await signIn(page, owner.email, owner.password);
  await expect(page.getByRole("heading", { level: 1, name: course.title })).toBeVisible();

  // A batch's unused codes.
  const batch = page.locator(".batch-list li").filter({ hasText: "e2e" });
  await batch.locator("details.confirm-action summary").click();
  const revokeUnused = batch.getByRole("button", { name: "Revoke unused" });
  await revokeUnused.click();
  expect(unusedOf()).toBe("2");
  await batch.getByLabel(/this batch's unused codes can never be used again/).check();
  await revokeUnused.click();
  await expect.poll(unusedOf).toBe("0");

  // An API token.
  const name = `e2e token ${Date.now().toString(36)}`;
  await openHydrated(page, `/admin/t/${tenant}/tokens`);
  await page.getByLabel("Name").fill(name);
  await page.getByLabel(/integrations: webhooks and API tokens/).check();
  await page.getByLabel("Expires").selectOption("30");
  await page.getByRole("button", { name: "Create token" }).click();
  await expect(page.getByRole("status").filter({ hasText: "New token" })).toBeVisible();
  expect(
    sql(
      `SELECT array_to_string(scopes, ','), round(extract(epoch FROM expires_at - created_at) / 86400) FROM api_tokens WHERE name = '${name}'`,
    ),
  ).toBe("integrations,read|30");
  const token = page.locator("tr[data-token]").filter({ hasText: name });
  await expect(token).toContainText("integrations");
  await expect(token).toContainText("expires");
  await token.locator("details.confirm-action summary").click();
  const revoke = token.getByRole("button", { name: `Revoke token ${name}` });
  await revoke.click();
  const revokedTokens = () => sql(`SELECT count(*) FROM api_tokens WHERE name = '${name}' AND revoked_at IS NOT NULL`);
  expect(revokedTokens()).toBe("0");
  await token.getByLabel(/whatever uses this token stops working at once/).check();
  await revoke.click();
  await expect(token).toContainText("revoked");
  expect(revokedTokens()).toBe("1");

  // A webhook endpoint.
  const url = `https://hooks.example.com/${Date.now().toString(36)}`;
  await openHydrated(page, `/admin/t/${tenant}/webhooks`);
  await page.getByLabel("Endpoint URL").fill(url);
  await page.getByRole("button", { name: "Add endpoint" }).click();
  const endpoint = page.locator("tr[data-endpoint]").filter({ hasText: url });
  await expect(endpoint).toBeVisible();
  await endpoint.locator("details.confirm-action summary").click();
  const disable = endpoint.getByRole("button", { name: `Disable ${url}` });
  await disable.click();
  const disabled = () => sql(`SELECT count(*) FROM webhook_endpoints WHERE url = '${url}' AND disabled_at IS NOT NULL`);
  expect(disabled()).toBe("0");
  await endpoint.getByLabel(/this endpoint gets no more events, for good/).check();
  await disable.click();
  await expect(endpoint).toContainText("disabled");
  expect(disabled()).toBe("1");
});
